//! Keeping folders indexed: the watch loop (`watch.rs`: sync, then follow the folders'
//! changes), and the local socket (`socket.rs`) through which other processes search, ask for
//! status and run the agent's tools while a daemon holds the index.

pub(crate) mod socket;
mod watch;

pub use ingest::tools::daemon_client::socket_path;
pub use socket::{
    ask, ask_tool, status_of, Lingering, Listening, Request, Server, MAX_CONNECTIONS,
    REQUEST_TIMEOUT, TOOL_ANSWER_TIMEOUT,
};
pub use watch::{watch, SyncCause, WatchConfig};
