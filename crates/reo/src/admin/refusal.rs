//! What `reo admin` says when a call fails, in terms of what to do about it: a server that does
//! not answer (wrong endpoint, server down), an access key it does not know, a secret that does
//! not match, a clock too far from the server's, a user whose role does not allow the call. s3s
//! refuses a request's signature in S3's XML (`<Code>`, `<Message>`); the API's own refusals are
//! `{"error": …}` (`reo_gateway::api::admin_types::ApiError`).

use reo_gateway::api::admin_types::ApiError;

/// A request that got no answer: `cannot reach ENDPOINT: WHY`, with a hint when nothing listens.
pub fn unreachable(endpoint: &str, e: &reqwest::Error) -> String {
    let refused = chain(e).any(|s| {
        s.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
    });
    if refused {
        return format!("cannot reach {endpoint}: connection refused; is `reo serve` running there?");
    }
    // The innermost cause says most (reqwest's own message is "error sending request").
    let why = chain(e).last().map_or_else(|| e.to_string(), ToString::to_string);
    if e.is_timeout() {
        return format!("cannot reach {endpoint}: no answer in time ({why})");
    }
    format!("cannot reach {endpoint}: {why}")
}

/// `e` and its sources, outermost first.
fn chain<'a>(e: &'a (dyn std::error::Error + 'static)) -> impl Iterator<Item = &'a (dyn std::error::Error + 'static)> {
    std::iter::successors(Some(e), |e| e.source())
}

/// The text of the XML element `name` of `body`, if any.
fn element<'a>(body: &'a str, name: &str) -> Option<&'a str> {
    let start = body.find(&format!("<{name}>"))? + name.len() + 2;
    let len = body[start..].find(&format!("</{name}>"))?;
    Some(&body[start..start + len])
}

/// A non-2xx answer (`status`, `Date` header `date`, `body`) to `what` (`METHOD PATH`) made with
/// `access_key`, as an error message.
pub fn explain(endpoint: &str, access_key: &str, what: &str, status: u16, date: Option<&str>, body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    if let Ok(ApiError { error }) = serde_json::from_slice(body) {
        return format!("{what}: HTTP {status}: {}", error.trim());
    }
    let code = element(&text, "Code").unwrap_or("");
    let message = element(&text, "Message").unwrap_or("").trim();
    match code {
        "InvalidAccessKeyId" => format!(
            "{endpoint} refused the access key {access_key:?}: the server has no user with that key \
             (HTTP {status} {code}); check --access-key or REO_ACCESS_KEY"
        ),
        "SignatureDoesNotMatch" => format!(
            "{endpoint} refused the signature made with access key {access_key:?}: the secret key is \
             not that key's (HTTP {status} {code}); check --secret-key or REO_SECRET_KEY"
        ),
        "RequestTimeTooSkewed" => format!(
            "{endpoint} refused the request as signed at the wrong time (HTTP {status} {code}): the local \
             clock differs from the server's by more than it allows ({}); set the clocks right (NTP)",
            skew(date)
        ),
        "" => format!("{what}: HTTP {status}: {}", text.trim()),
        _ if message.is_empty() => format!("{what}: HTTP {status} {code}"),
        _ => format!("{what}: HTTP {status} {code}: {message}"),
    }
}

/// How far the local clock is from the server's, as a phrase, from the server's `Date` header.
fn skew(server_date: Option<&str>) -> String {
    let now = std::time::SystemTime::now();
    let local = httpdate::fmt_http_date(now);
    let Some(server) = server_date.and_then(|d| httpdate::parse_http_date(d).ok()) else {
        return format!("local time {local}; the server sent no time");
    };
    let (ahead, d) = match now.duration_since(server) {
        Ok(d) => ("ahead of", d),
        Err(e) => ("behind", e.duration()),
    };
    format!(
        "{} s {ahead} the server's: local time {local}, the server's {}",
        d.as_secs(),
        httpdate::fmt_http_date(server)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const WHAT: &str = "GET /_reo/admin/status";
    const DATE: Option<&str> = Some("Mon, 01 Jan 2001 00:00:00 GMT");

    fn s3_error(code: &str) -> Vec<u8> {
        format!("<?xml version=\"1.0\"?><Error><Code>{code}</Code><Message>m</Message></Error>").into_bytes()
    }

    #[test]
    fn a_wrong_key_is_named_and_said_refused() {
        let m = explain("http://h:1", "AK1", WHAT, 403, DATE, &s3_error("InvalidAccessKeyId"));
        assert!(m.contains("refused the access key \"AK1\"") && m.contains("403"), "{m}");
        let m = explain("http://h:1", "AK1", WHAT, 403, DATE, &s3_error("SignatureDoesNotMatch"));
        assert!(m.contains("access key \"AK1\"") && m.contains("secret key") && m.contains("403"), "{m}");
    }

    #[test]
    fn a_skewed_clock_is_said_to_differ_from_the_servers() {
        let m = explain("http://h:1", "AK1", WHAT, 403, DATE, &s3_error("RequestTimeTooSkewed"));
        assert!(m.contains("local clock differs from the server's"), "{m}");
        assert!(
            m.contains("s ahead of the server's") && m.contains("the server's Mon, 01 Jan 2001 00:00:00 GMT"),
            "{m}"
        );
    }

    #[test]
    fn api_errors_and_other_codes_keep_the_servers_message() {
        let what = "POST /_reo/admin/device/replace";
        assert_eq!(
            explain("http://h:1", "AK", what, 409, None, br#"{"error": "device 1 is healthy"}"#),
            "POST /_reo/admin/device/replace: HTTP 409: device 1 is healthy"
        );
        let m = explain("http://h:1", "AK", WHAT, 403, None, &s3_error("AccessDenied"));
        assert_eq!(m, "GET /_reo/admin/status: HTTP 403 AccessDenied: m");
    }
}
