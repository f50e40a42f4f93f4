"""Validates Compose files (given as JSON) against the Compose Specification's schema.

    python3 tests/compose/validate.py <schema> <file.json>...

compose-spec.json beside this file is the compose-spec/compose-spec repository's
schema/compose-spec.json (commit 170098b, Apache-2.0), the schema `docker compose config`
validates with. The test converts the YAML to JSON first.
Exit 0: all valid; 1: a file is not, each error printed; 3: jsonschema is not installed.
"""
import json
import sys

try:
    import jsonschema
except ImportError as e:
    print(f"cannot validate: {e}")
    sys.exit(3)

schema = json.load(open(sys.argv[1], encoding="utf-8"))
validator = jsonschema.Draft7Validator(schema)
bad = 0
for path in sys.argv[2:]:
    for error in validator.iter_errors(json.load(open(path, encoding="utf-8"))):
        bad += 1
        print(f"{path}: {'/'.join(map(str, error.absolute_path))}: {error.message[:300]}")
print(f"{len(sys.argv) - 2} file(s), {bad} error(s)")
sys.exit(1 if bad else 0)
