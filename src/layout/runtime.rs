//! The runtime a scaffold repository vendors in `platform/runtime`, and its stamp (which
//! `scaffold init` writes and rule runtime-drift reads; see `check::workqueue::stamp`).

/// The vendored runtime's directory in a checked repository.
pub const RUNTIME_DIR: &str = "platform/runtime";
/// Its stamp.
pub const STAMP_PATH: &str = "platform/runtime/.scaffold-stamp";

/// The version and content hash of the runtime this binary embeds (empty strings when it
/// was built without `runtime/`).
pub fn runtime_stamp() -> (&'static str, &'static str) {
    (
        env!("SCAFFOLD_RUNTIME_VERSION"),
        env!("SCAFFOLD_RUNTIME_HASH"),
    )
}

/// The stamp file's text for a version and hash.
pub fn render(version: &str, hash: &str) -> String {
    format!(
        "# The scaffold-runtime vendored here; `scaffold check` compares it (rule runtime-drift).\n\
         version = \"{version}\"\nhash = \"{hash}\"\n"
    )
}
