//! A worker's loop (`workers/<worker>/src/work_loop.rs`): the provider clients it builds
//! before its first claim, read the same way by the generator (to wire their settings
//! into the deployments) and the checker (`setting-undeployed`).

/// The first path segment — the crate — of each `<crate>::…<Provider>Client::from_env` the
/// loop names, in order.
pub fn client_crates(work_loop: &str) -> Vec<&str> {
    let is_path = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    work_loop
        .match_indices("Client::from_env")
        .filter_map(|(at, _)| {
            let before = &work_loop[..at];
            let start = before.rfind(|c: char| !is_path(c)).map_or(0, |i| i + 1);
            let path = &before[start..];
            // A crate's path has at least the crate and the client: `x::YClient`.
            let (krate, _) = path.split_once("::")?;
            (!krate.is_empty()).then_some(krate)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crate_of_each_client_the_loop_builds() {
        let text = "        // scaffold:handlers\n        .resource_with(acme_carrier_integration::CarrierClient::from_env)\n        .resource_with(acme_mail_integration::api::MailClient::from_env)\n        .resource_with(MyClient::from_env)\n        .handler(crate::handlers::a::AHandler)\n";
        assert_eq!(
            client_crates(text),
            ["acme_carrier_integration", "acme_mail_integration"]
        );
    }
}
