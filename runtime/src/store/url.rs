//! Queue URLs as messages show them (never with a password), and the errors of their
//! parameters: on every build, whichever backends it was built with.

/// `url` with the password of its user part replaced by `***`, for messages.
pub fn redact_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let redacted = match rest[..authority_end].rfind('@') {
        Some(at) => match rest[..at].split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***{}", &rest[at..]),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    };
    // A `password=` query parameter (the driver takes one) is a password too.
    match redacted.split_once('?') {
        Some((base, query)) => {
            let query: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((key, _)) if key.eq_ignore_ascii_case("password") => {
                        format!("{key}=***")
                    }
                    _ => pair.to_owned(),
                })
                .collect();
            format!("{base}?{}", query.join("&"))
        }
        None => redacted,
    }
}

/// Parameter `parameter` of `url` has a value the queue cannot use; `allowed` says what it
/// takes. `value` is shown, so it is never one that may be secret.
#[cfg(feature = "postgres")]
pub(crate) fn bad_parameter(
    url: &str,
    parameter: &str,
    value: Option<&str>,
    allowed: &str,
) -> crate::error::StoreError {
    crate::error::StoreError::UrlParameter {
        url: redact_password(url),
        parameter: parameter.to_owned(),
        value: value.map(str::to_owned),
        allowed: allowed.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::redact_password;

    #[test]
    fn passwords_in_the_user_part_and_the_query_are_hidden() {
        assert_eq!(
            redact_password("postgres://u:secret@h:5432/db?schema=q"),
            "postgres://u:***@h:5432/db?schema=q"
        );
        assert_eq!(
            redact_password("postgres://u@h/db?password=secret&sslmode=require"),
            "postgres://u@h/db?password=***&sslmode=require"
        );
        assert_eq!(redact_password("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(redact_password("sqlite://a:b@c"), "sqlite://a:***@c");
    }
}
