//! Who owns what a command writes: each file it creates or changes, by the agents of
//! `agent/codemap.yml` (as the plan leaves it) that may write it — so `scaffold worker`
//! can say which agents' parts its change has, and each part passes `scaffold check --as`
//! its owner.

use std::collections::BTreeMap;

use super::plan::Plan;
use crate::repo::codemap::{CODEMAP_PATH, Codemap};

/// The owners of a plan's files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owners {
    /// Every file the plan writes, by each agent that may write it (a file two agents may
    /// write is listed under both); files no agent may write, and generated ones.
    Known {
        by_agent: BTreeMap<String, Vec<String>>,
        /// Under a `generated` entry's paths: its generator's, no agent's.
        generated: Vec<String>,
        /// Writable by no agent: `scaffold check` reports each as `file-unowned`.
        unowned: Vec<String>,
    },
    /// The codemap names no agents: ownership is not used in this repository.
    NoAgents,
    /// The codemap could not be read or does not parse (`scaffold check` says why).
    Unread,
}

/// The owners of the files `plan` creates or changes.
pub fn of(plan: &Plan) -> Owners {
    let Ok(Some(text)) = plan.text(CODEMAP_PATH) else {
        return Owners::Unread;
    };
    let Ok(codemap) = Codemap::parse(&text) else {
        return Owners::Unread;
    };
    if codemap.agents.is_empty() {
        return Owners::NoAgents;
    }
    let mut paths = plan.created();
    paths.extend(plan.changed());
    paths.sort_unstable();
    let mut by_agent: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let (mut generated, mut unowned) = (Vec::new(), Vec::new());
    for path in paths {
        let writers = codemap.writers(&path);
        if writers.is_empty() {
            if codemap.is_generated(&path) {
                generated.push(path);
            } else {
                unowned.push(path);
            }
            continue;
        }
        for agent in writers {
            by_agent
                .entry(agent.to_owned())
                .or_default()
                .push(path.clone());
        }
    }
    Owners::Known {
        by_agent,
        generated,
        unowned,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_with(codemap: &str, files: &[&str]) -> (tempfile::TempDir, Plan) {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut plan = Plan::new(dir.path());
        plan.create(CODEMAP_PATH, codemap.as_bytes().to_vec(), None)
            .expect("plan");
        for f in files {
            plan.create(f, Vec::new(), None).expect("plan");
        }
        (dir, plan)
    }

    #[test]
    fn each_file_goes_to_every_agent_that_may_write_it() {
        let codemap = "version: 1\nlayers:\n  w: {paths: [\"workers/**\"]}\nagents:\n  a: {writable: [\"workers/**\", \"Cargo.lock\"]}\n  b: {writable: [\"**\"], forbidden: [\"workers/**\", \"sdk/**\"]}\ngenerated:\n  - {paths: [\"sdk/**\"], from: [\"api/**\"]}\n";
        let (_dir, plan) = plan_with(
            codemap,
            &["workers/w/src/main.rs", "Cargo.lock", "sdk/x.rs"],
        );
        let Owners::Known {
            by_agent,
            generated,
            unowned,
        } = of(&plan)
        else {
            panic!("known owners");
        };
        assert_eq!(by_agent["a"], ["Cargo.lock", "workers/w/src/main.rs"]);
        assert_eq!(by_agent["b"], ["Cargo.lock", "agent/codemap.yml"]);
        assert_eq!(generated, ["sdk/x.rs"]);
        assert!(unowned.is_empty());
        let (_dir, plan) = plan_with(
            "version: 1\nlayers:\n  w: {paths: [\"workers/**\"]}\nagents:\n  a: {writable: [\"workers/**\"]}\n",
            &["om/x.rs"],
        );
        assert!(
            matches!(of(&plan), Owners::Known { unowned, .. } if unowned == ["agent/codemap.yml", "om/x.rs"])
        );
        let (_dir, plan) = plan_with(
            "version: 1\nlayers:\n  w: {paths: [\"workers/**\"]}\n",
            &["om/x.rs"],
        );
        assert_eq!(of(&plan), Owners::NoAgents);
        let (_dir, plan) = plan_with("version: [\n", &["om/x.rs"]);
        assert_eq!(of(&plan), Owners::Unread);
    }
}
