//! [`Console`]: the web console's state the server keeps — its sessions and the charts' history
//! — apart from the handlers (`console/mod.rs`), so the API can own it without importing them.

use super::history::History;
use super::sessions::Sessions;

/// Sessions and the charts' history.
#[derive(Default)]
pub struct Console {
    sessions: Sessions,
    history: History,
}

impl Console {
    /// The sign-ins.
    pub fn sessions(&self) -> &Sessions {
        &self.sessions
    }

    /// The charts' samples.
    pub fn history(&self) -> &History {
        &self.history
    }
}
