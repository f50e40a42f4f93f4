//! How code names workspace crates: per crate, which workspace crate a name in its code
//! refers to, from the crates' library names and their own dependency tables.

use std::collections::HashMap;

use crate::repo::workspace::Crate;

/// Names code uses for workspace crates: every crate's library name, and, per crate, the
/// names its own dependencies give — a path dependency (renamed or not) names its target;
/// any other dependency (crates.io, git) names an outside crate and shadows a workspace
/// crate of the same name.
#[derive(Debug, Default)]
pub struct CrateNames {
    global: HashMap<String, usize>,
    /// Per crate: code name → the workspace crate, or `None` for an outside crate.
    local: Vec<HashMap<String, Option<usize>>>,
}

impl CrateNames {
    pub(super) fn new(all: &[Crate]) -> Self {
        let global = all
            .iter()
            .enumerate()
            .map(|(i, c)| (c.lib_name.clone(), i))
            .collect();
        let local = all
            .iter()
            .map(|c| {
                let mut names = HashMap::new();
                for d in &c.deps {
                    let target = d
                        .path
                        .as_deref()
                        .and_then(|dir| all.binary_search_by(|o| o.dir.as_str().cmp(dir)).ok());
                    let name = match target {
                        Some(t) if d.key == d.package => all[t].lib_name.clone(),
                        _ => d.key.replace('-', "_"),
                    };
                    // A path dependency wins over an outside one of the same name (a
                    // target-specific table may list both).
                    let slot = names.entry(name).or_insert(target);
                    if slot.is_none() {
                        *slot = target;
                    }
                }
                names
            })
            .collect();
        CrateNames { global, local }
    }

    /// The workspace crate `name` refers to in the code of crate `krate`; never the crate
    /// itself (its own name in its integration tests is not an edge), and never when the
    /// crate depends on an outside crate of that name.
    pub fn resolve(&self, krate: usize, name: &str) -> Option<usize> {
        let target = match self.local.get(krate).and_then(|m| m.get(name)) {
            Some(local) => (*local)?,
            None => *self.global.get(name)?,
        };
        (target != krate).then_some(target)
    }

    /// [`resolve`](Self::resolve), for a name the crate declares as a dependency only.
    pub fn resolve_declared(&self, krate: usize, name: &str) -> Option<usize> {
        let target = (*self.local.get(krate)?.get(name)?)?;
        (target != krate).then_some(target)
    }

    /// Every name any crate may use, sorted (what files are scanned for).
    pub fn all(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self
            .global
            .keys()
            .chain(
                self.local
                    .iter()
                    .flat_map(|m| m.iter().filter(|(_, t)| t.is_some()).map(|(k, _)| k)),
            )
            .map(String::as_str)
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}
