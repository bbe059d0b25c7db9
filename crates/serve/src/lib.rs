//! `ingest-serve`: the faces of `ingest` that answer over a network or a socket, above its
//! tools — the HTTP service ([`service`]), the MCP server ([`mcp`]), the watch daemon and
//! its local socket ([`daemon`]), the async upload queue the service feeds
//! ([`AsyncUploads`]), and the retrieval evaluation that drives a search as they do
//! ([`eval`]). Each face parses its own wire format and hands the tool calls to
//! [`ingest::tools`]: the access rule, the budgets and the search policy are below this
//! crate, so every face answers alike. ARCHITECTURE.md draws the crates.

#![warn(missing_docs)]

mod async_uploads;
pub mod daemon;
pub mod eval;
pub mod mcp;
pub mod service;

pub use async_uploads::AsyncUploads;
