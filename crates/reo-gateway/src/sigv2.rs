//! Signature Version 2 is refused unless the operator opts in (`[server] allow_sigv2`): it signs
//! neither the query string nor, in practice, a time the server checks — a captured request
//! replays forever and its signature fits other queries — so SigV4 is the only accepted
//! signature by default. Requests are told apart before s3s sees them: an `Authorization: AWS
//! key:signature` header, or a presigned URL with `AWSAccessKeyId` and `Signature`.

use s3s::{s3_error, S3Error};

/// S3's refusal of a SigV2-signed request, `None` for any other.
pub fn refuse(headers: &http::HeaderMap, query: Option<&str>) -> Option<S3Error> {
    let header = headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.starts_with("AWS ") && !a.starts_with("AWS4-"));
    let presigned = query.is_some_and(|q| {
        let has = |name: &str| q.split('&').any(|p| p.split('=').next() == Some(name));
        has("AWSAccessKeyId") && has("Signature")
    });
    (header || presigned).then(|| {
        s3_error!(
            AccessDenied,
            "Signature Version 2 is not accepted by this gateway: sign with SigV4 (AWS4-HMAC-SHA256; e.g. \
             boto3 Config(signature_version=\"s3v4\"), AWS CLI: s3.signature_version = s3v4); an \
             operator can allow SigV2 for legacy clients with [server] allow_sigv2 = true"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::refuse;

    #[test]
    fn only_sigv2_is_refused() {
        let mut h = http::HeaderMap::new();
        assert!(refuse(&h, None).is_none());
        h.insert("authorization", "AWS4-HMAC-SHA256 Credential=k/20260101/us-east-1/s3/aws4_request".parse().unwrap());
        assert!(refuse(&h, None).is_none());
        h.insert("authorization", "AWS AKIDEXAMPLE:frJIUN8DYpKDtOLCwo//yllqDzg=".parse().unwrap());
        assert_eq!(refuse(&h, None).unwrap().code().as_str(), "AccessDenied");
        let none = http::HeaderMap::new();
        assert!(refuse(&none, Some("AWSAccessKeyId=k&Expires=1&Signature=s")).is_some());
        assert!(refuse(&none, Some("X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=s")).is_none());
        assert!(refuse(&none, Some("prefix=Signature")).is_none());
    }
}
