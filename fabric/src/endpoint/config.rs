//! How an endpoint is opened: provider, registration modes, progress
//! and timeout, from code or from the environment.

use super::*;

/// How to open an endpoint.
#[derive(Debug, Clone)]
pub struct EndpointConfig {
    /// The provider.
    pub provider: Provider,
    /// `mr_mode` bits to request in the hints, on top of those onesided always
    /// offers; the [`MrMode::FORCEABLE`] ones among them are honoured even
    /// where the provider does not require them. Set [`MrMode::VERBS`] to run
    /// the verbs-style registration path on any provider.
    pub mr_mode_request: MrMode,
    /// Progress on calls only, or a background thread too.
    pub progress: ProgressMode,
    /// How long an operation waits before giving up where that is sound
    /// (see the module docs).
    pub timeout: Duration,
    /// The longest sleep of a waiting thread's backoff (the background
    /// progress thread's too, until nothing happened for 100 ms: then up
    /// to 10 ms, or this if longer).
    pub max_sleep: Duration,
    /// Who applies remote atomics; `None`: [`Atomics::default_for`] the
    /// provider.
    pub atomics: Option<Atomics>,
}

impl Default for EndpointConfig {
    fn default() -> EndpointConfig {
        EndpointConfig {
            provider: Provider::Shm,
            mr_mode_request: MrMode::empty(),
            progress: ProgressMode::Background,
            timeout: Duration::from_secs(60),
            max_sleep: DEFAULT_MAX_SLEEP,
            atomics: None,
        }
    }
}

impl EndpointConfig {
    /// The configuration the environment asks for:
    /// `ONESIDED_PROVIDER` (or `FI_PROVIDER`; default `shm`),
    /// `ONESIDED_MR_MODE` (`default` or `verbs`),
    /// `ONESIDED_PROGRESS` (`background`, the default, or `manual`),
    /// `ONESIDED_TIMEOUT` (seconds, default 60),
    /// `ONESIDED_ATOMICS` (`native` or `software`; default by provider).
    ///
    /// # Errors
    /// [`Error::UnknownProvider`] or [`Error::BadEnv`].
    pub fn from_env() -> Result<EndpointConfig> {
        let mut config = EndpointConfig {
            provider: Provider::from_env()?,
            ..EndpointConfig::default()
        };
        if let Ok(value) = std::env::var("ONESIDED_MR_MODE") {
            config.mr_mode_request = match value.as_str() {
                "" | "default" => MrMode::empty(),
                "verbs" => MrMode::VERBS,
                _ => {
                    return Err(Error::BadEnv {
                        name: "ONESIDED_MR_MODE",
                        value: value.into(),
                        why: "expected default or verbs",
                    })
                }
            };
        }
        if let Ok(value) = std::env::var("ONESIDED_PROGRESS") {
            config.progress = match value.as_str() {
                "" | "background" => ProgressMode::Background,
                "manual" => ProgressMode::Manual,
                _ => {
                    return Err(Error::BadEnv {
                        name: "ONESIDED_PROGRESS",
                        value: value.into(),
                        why: "expected background or manual",
                    })
                }
            };
        }
        if let Ok(value) = std::env::var("ONESIDED_ATOMICS") {
            config.atomics = match value.as_str() {
                "" => None,
                "native" => Some(Atomics::Native),
                "software" => Some(Atomics::Software),
                _ => {
                    return Err(Error::BadEnv {
                        name: "ONESIDED_ATOMICS",
                        value: value.into(),
                        why: "expected native or software",
                    })
                }
            };
        }
        if let Ok(value) = std::env::var("ONESIDED_TIMEOUT") {
            config.timeout = timeout_from_secs(&value).ok_or_else(|| Error::BadEnv {
                name: "ONESIDED_TIMEOUT",
                value: value.as_str().into(),
                why: "expected a positive number of seconds, at most a year",
            })?;
        }
        Ok(config)
    }
}
