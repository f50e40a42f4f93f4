"""Validates SARIF files against the official SARIF 2.1.0 schema, formats included.

    python3 tests/sarif/validate.py <schema> <file>...

sarif-schema-2.1.0.json beside this file is the OASIS sarif-spec repository's
sarif-2.1/schema/sarif-schema-2.1.0.json (commit e058381). `uri-reference` is checked only
where rfc3986-validator is installed, so its absence is an error, not a silent pass.
Exit 0: all valid; 1: a file is not, each error printed; 3: jsonschema or
rfc3986-validator is not installed.
"""
import json
import sys

try:
    import jsonschema
    import rfc3986_validator  # noqa: F401  (what checks the uri-reference format)
except ImportError as e:
    print(f"cannot validate: {e}")
    sys.exit(3)

schema = json.load(open(sys.argv[1], encoding="utf-8"))
checker = jsonschema.FormatChecker()
if "uri-reference" not in checker.checkers:
    print("cannot validate: jsonschema checks no uri-reference format here")
    sys.exit(3)
validator = jsonschema.Draft4Validator(schema, format_checker=checker)
bad = 0
for path in sys.argv[2:]:
    for error in validator.iter_errors(json.load(open(path, encoding="utf-8"))):
        bad += 1
        print(f"{path}: {'/'.join(map(str, error.absolute_path))}: {error.message[:300]}")
print(f"{len(sys.argv) - 2} file(s), {bad} error(s)")
sys.exit(1 if bad else 0)
