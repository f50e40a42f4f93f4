//! JSON Schemas of the manifests, for editors (`scaffold schema codemap|gate-matrix`).
//! They mirror the validation in `repo::codemap` and `repo::gate_matrix`.

use serde_json::{Value, json};

use crate::check::catalogue;

fn globs(desc: &str) -> Value {
    json!({"type": "array", "items": {"type": "string", "minLength": 1}, "description": desc})
}

pub fn codemap() -> Value {
    let rule_ids: Vec<&str> = catalogue::rules().iter().map(|r| r.id).collect();
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://scaffold.invalid/schema/codemap.json",
        "title": "agent/codemap.yml",
        "type": "object",
        "additionalProperties": false,
        "required": ["version", "layers"],
        "properties": {
            "version": {"const": 1},
            "name": {"type": "string", "pattern": "^[a-z][a-z0-9_-]{0,63}$", "description": "The project name; settings are read from <NAME>_* variables."},
            "layers": {
                "type": "object",
                "description": "A path belongs to the first layer one of whose globs matches it.",
                "additionalProperties": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["paths"],
                    "properties": {
                        "paths": globs("Globs of the files in this layer (`*` within a segment, `**` across)."),
                        "may_import": {"type": "array", "items": {"type": "string"}, "description": "Layers this layer may import."},
                        "must_not_import": {"type": "array", "items": {"type": "string"}, "description": "Layers this layer must never import."},
                        "workers": {"type": "boolean", "description": "Crates of this layer are workers (always true for `workers`)."}
                    }
                }
            },
            "agents": {
                "type": "object",
                "additionalProperties": {
                    "type": "object",
                    "additionalProperties": false,
                    "properties": {
                        "writable": globs("Paths the agent may change."),
                        "forbidden": globs("Paths the agent must never change.")
                    }
                }
            },
            "generated": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["paths", "from"],
                    "properties": {"paths": globs("Generated files."), "from": globs("The sources they are generated from.")}
                }
            },
            "policy": {
                "type": "object",
                "propertyNames": {"enum": rule_ids},
                "additionalProperties": {"enum": ["off", "warning", "error"]}
            }
        }
    })
}

pub fn gate_matrix() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://scaffold.invalid/schema/gate-matrix.json",
        "title": "agent/manifests/gate-matrix.yml",
        "type": "object",
        "additionalProperties": false,
        "required": ["version"],
        "properties": {
            "version": {"const": 1},
            "gates": {
                "type": "object",
                "additionalProperties": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["run"],
                    "properties": {
                        "run": {"type": "string", "minLength": 1, "description": "Command run without a shell; `{package}` is the Cargo package owning a changed path."},
                        "evidence": {"type": "string"}
                    }
                }
            },
            "rules": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["when", "require"],
                    "properties": {
                        "when": {"type": "object", "additionalProperties": false, "required": ["paths"], "properties": {"paths": globs("Changed paths that require the gates.")}},
                        "require": {"type": "array", "items": {"type": "string"}}
                    }
                }
            }
        }
    })
}
