//! The worker roles (docs/reference.md#worker-readmes, `rules/worker-roles.yml`, embedded in the binary): the
//! roles a worker may declare and the strategies each must document. `scaffold worker`
//! offers the roles; the worker-role and worker-strategy rules check them.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

const ROLES_YML: &str = include_str!("../../rules/worker-roles.yml");

/// One required strategy: any of these headings satisfies it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement(pub Vec<String>);

impl Requirement {
    pub fn display(&self) -> String {
        self.0.join(" or ")
    }
}

#[derive(Debug)]
pub struct Roles {
    pub base: Vec<Requirement>,
    pub roles: BTreeMap<String, Vec<Requirement>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawRequirement {
    One(String),
    Any(Vec<String>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRoles {
    #[allow(dead_code)]
    version: u32,
    base: Vec<RawRequirement>,
    roles: BTreeMap<String, Vec<RawRequirement>>,
}

fn requirement(r: RawRequirement) -> Requirement {
    match r {
        RawRequirement::One(s) => Requirement(vec![s]),
        RawRequirement::Any(v) => Requirement(v),
    }
}

/// The worker roles table (docs/reference.md#worker-readmes).
pub fn roles() -> &'static Roles {
    static ROLES: OnceLock<Roles> = OnceLock::new();
    ROLES.get_or_init(|| {
        let raw: RawRoles = serde_saphyr::from_str(ROLES_YML)
            .unwrap_or_else(|e| panic!("embedded rules/worker-roles.yml is invalid: {e}"));
        Roles {
            base: raw.base.into_iter().map(requirement).collect(),
            roles: raw
                .roles
                .into_iter()
                .map(|(k, v)| (k, v.into_iter().map(requirement).collect()))
                .collect(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_parse() {
        let r = roles();
        assert_eq!(r.base.len(), 4);
        assert_eq!(
            r.roles["projector"][0],
            Requirement(vec!["Replay strategy".into()])
        );
        assert!(r.roles.contains_key("maintenance"));
    }
}
