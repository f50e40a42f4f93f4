use super::*;

fn scan(src: &str) -> Vec<(String, ExecKind)> {
    let file = SourceFile::new("w.rs", src);
    crate::check::workqueue::with_parsed(&file, |tree| {
        let mut v = Fns {
            file: &file,
            impls: Vec::new(),
            out: Vec::new(),
        };
        v.visit_file(tree);
        v.out
            .into_iter()
            .map(|e| (e.owner, e.what))
            .collect::<Vec<_>>()
    })
    .expect("parses")
}

fn shell(s: &str, f: &str) -> ExecKind {
    ExecKind::Shell {
        shell: s.to_owned(),
        flag: f.to_owned(),
    }
}

#[test]
fn shells_with_their_command_flag() {
    let found = scan(
        "fn a(s: &str) { tokio::process::Command::new(\"bash\").args(&[\"-c\", s]); }\n\
         fn b(s: &str) { std::process::Command::new(\"cmd.exe\").args(vec![\"/C\", s]); }\n\
         fn c(s: &str) { let mut p = Command::new(\"/usr/bin/env\"); p.arg(\"sh\"); p.arg(\"-ec\").arg(s); }\n\
         fn d() { Command::new(\"pwsh\").arg(\"-Command\").arg(\"ls\"); }\n",
    );
    assert_eq!(
        found,
        [
            ("a".to_owned(), shell("bash", "-c")),
            ("b".to_owned(), shell("cmd", "/C")),
            ("c".to_owned(), shell("sh", "-ec")),
            ("d".to_owned(), shell("pwsh", "-Command")),
        ]
    );
}

#[test]
fn programs_built_from_literals_or_not_understood_are_silent() {
    let found = scan(
        "const TOOL: &str = \"convert\";\n\
         fn a(flag: bool) { Command::new(if flag { \"a\" } else { \"b\" }); }\n\
         fn b() { Command::new(TOOL); Command::new(concat!(\"/usr/\", \"bin/x\")); }\n\
         fn c() { let p = String::from(\"x\"); Command::new(&p); Command::new(format!(\"{}-x\", TOOL)); }\n\
         fn d(tool: &'static str) { Command::new(tool); }\n\
         fn e() { let names = [\"a\"]; for n in names { Command::new(n); } }\n\
         fn f() { Command::new(\"sh\").arg(\"script.sh\"); let label = \"sh\"; }\n\
         #[cfg(test)] mod tests { fn t(p: &str) { Command::new(p); } }\n",
    );
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn programs_from_received_values_are_reported() {
    let found = scan(
        "impl H { fn handle(&self, item: &Item<P>) {\n\
             Command::new(&item.payload.program);\n\
             let p = item.payload.tool.clone(); Command::new(p);\n\
             Command::new(format!(\"{}/bin\", self.root));\n\
         } }\n",
    );
    let owners: Vec<&str> = found.iter().map(|(o, _)| o.as_str()).collect();
    assert_eq!(owners, ["H::handle"; 3]);
    assert!(
        found
            .iter()
            .all(|(_, w)| matches!(w, ExecKind::Received(_)))
    );
}
