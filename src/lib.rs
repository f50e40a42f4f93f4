//! scaffold: generator, checker and work-queue runtime for Rust monorepos that run
//! background workers. The binary is a thin `main` over [`app::run`].

pub mod app;
pub mod check;
pub mod cli;
pub mod queue;
pub mod repo;
pub mod report;
pub mod source;
