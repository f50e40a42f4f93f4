//! scaffold: generator, checker and work-queue runtime for Rust monorepos that run
//! background workers. The binary is a thin `main` over [`app::run`].

pub mod app;
pub mod changes;
pub mod check;
pub mod cli;
pub mod gates;
pub mod generate;
pub mod hook;
pub mod layout;
pub mod queue;
pub mod repo;
pub mod report;
pub mod schema;
pub mod source;
