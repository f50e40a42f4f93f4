//! What a remote worker's store is built from: the coordinator's origin, the worker's own
//! state directory, the CA it trusts, the enrollment token file, the protocol range.

use std::path::PathBuf;
use std::time::Duration;

use crate::protocol::PROTOCOL;

/// A remote store's settings (README.md#the-workers-side-the-remote-backend). Built by the worker from its
/// own settings (`<NAME>_<WORKER>_COORDINATOR_URL`, `…_STATE_DIR`, `…_CA_FILE`,
/// `…_TOKEN_FILE`), never from a database URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteConfig {
    /// The coordinator's origin: `https://host[:port]`, or `http://` on a loopback address
    /// only.
    pub url: String,
    /// Where the device key and the enrolled identity live: a directory of this user's,
    /// mode 0700, never reached through a symlink (made so when missing).
    pub state_dir: PathBuf,
    /// PEM roots to trust instead of the platform's.
    pub ca_file: Option<PathBuf>,
    /// The single-use enrollment token (`scf_enr_…`), read on the first start and deleted
    /// once spent.
    pub token_file: Option<PathBuf>,
    /// The name the token was made for (`scaffold queue enroll --worker NAME`).
    pub worker_name: String,
    /// The protocol versions this worker speaks.
    pub protocol: (i64, i64),
    /// How long one call may take (a claim's long poll adds its wait).
    pub request_timeout: Duration,
    /// How long a transient failure (no connection, a 5xx, a 429) is retried within one
    /// call before the call fails.
    pub retry_for: Duration,
}

impl RemoteConfig {
    /// Settings for `url` with the state in `state_dir`, enrolling as `worker_name`.
    pub fn new(
        url: impl Into<String>,
        state_dir: impl Into<PathBuf>,
        worker_name: impl Into<String>,
    ) -> Self {
        RemoteConfig {
            url: url.into(),
            state_dir: state_dir.into(),
            ca_file: None,
            token_file: None,
            worker_name: worker_name.into(),
            protocol: PROTOCOL,
            request_timeout: Duration::from_secs(30),
            retry_for: Duration::from_secs(10),
        }
    }

    /// Trusts the PEM roots in `path` instead of the platform's.
    #[must_use]
    pub fn ca_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.ca_file = Some(path.into());
        self
    }

    /// Enrolls with the token in `path` when the state directory holds no identity yet.
    #[must_use]
    pub fn token_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.token_file = Some(path.into());
        self
    }

    /// Speaks protocol versions `min..=max`.
    #[must_use]
    pub fn protocol(mut self, min: i64, max: i64) -> Self {
        self.protocol = (min, max);
        self
    }

    /// Retries a transient failure within one call for at most `d`.
    #[must_use]
    pub fn retry_for(mut self, d: Duration) -> Self {
        self.retry_for = d;
        self
    }

    /// The origin sessions are signed for: the URL without a trailing slash.
    pub(crate) fn origin(&self) -> &str {
        self.url.trim_end_matches('/')
    }
}
