//! Limits on presigned URLs that s3s does not check: `X-Amz-Expires` is at most a week, as S3
//! allows (a longer one would turn a leaked URL into a lasting credential), and a value that is
//! not a non-negative integer is refused as S3 refuses it, before s3s reads the request.

use s3s::{s3_error, S3Error};

/// The longest validity S3 accepts for a presigned URL, in seconds.
pub const MAX_EXPIRES: u64 = 7 * 24 * 3600;

/// S3's error for a presigned request whose `X-Amz-Expires` is out of bounds; `None` for any
/// other request.
pub fn check(query: Option<&str>) -> Option<S3Error> {
    let value = query?.split('&').find_map(|p| p.strip_prefix("X-Amz-Expires="))?;
    match value.parse::<i64>() {
        Ok(n) if n < 0 => Some(s3_error!(AccessDenied, "X-Amz-Expires must be non-negative")),
        Ok(n) if n as u64 > MAX_EXPIRES => Some(s3_error!(
            AuthorizationQueryParametersError,
            "X-Amz-Expires must be less than a week (in seconds) that is {MAX_EXPIRES}"
        )),
        Ok(_) => None,
        Err(_) => Some(s3_error!(AuthorizationQueryParametersError, "X-Amz-Expires should be a number: {value:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn a_week_at_most_and_never_negative() {
        assert!(check(None).is_none());
        assert!(check(Some("list-type=2")).is_none());
        assert!(check(Some("X-Amz-Expires=604800&X-Amz-Signature=x")).is_none());
        let code = |q| check(Some(q)).map(|e| e.code().as_str().to_owned());
        assert_eq!(code("X-Amz-Expires=604801").as_deref(), Some("AuthorizationQueryParametersError"));
        assert_eq!(code("a=1&X-Amz-Expires=-1").as_deref(), Some("AccessDenied"));
        assert_eq!(code("X-Amz-Expires=soon").as_deref(), Some("AuthorizationQueryParametersError"));
    }
}
