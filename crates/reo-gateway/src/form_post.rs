//! Browser-form uploads (`POST` with `multipart/form-data`, S3's POST Object) are refused before
//! anything of the body is read: Reo does not implement POST Object, and s3s would otherwise
//! buffer the form's file (up to 5 GiB) before checking its policy — memory any client could
//! make the server spend without credentials — and would take a valid policy as credentials for
//! the `/_reo/` API.

use s3s::{s3_error, S3Error};

/// S3's refusal of a form upload; `None` for any other request.
pub fn refuse(method: &http::Method, headers: &http::HeaderMap) -> Option<S3Error> {
    let form = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.trim_start().to_ascii_lowercase().starts_with("multipart/form-data"));
    (method == http::Method::POST && form)
        .then(|| s3_error!(NotImplemented, "browser-form uploads (POST Object) are not supported by this gateway"))
}

#[cfg(test)]
mod tests {
    use super::refuse;

    #[test]
    fn only_form_posts_are_refused() {
        let mut h = http::HeaderMap::new();
        assert!(refuse(&http::Method::POST, &h).is_none());
        h.insert("content-type", "Multipart/Form-Data; boundary=x".parse().unwrap());
        assert_eq!(refuse(&http::Method::POST, &h).unwrap().code().as_str(), "NotImplemented");
        assert!(refuse(&http::Method::PUT, &h).is_none());
        h.insert("content-type", "application/xml".parse().unwrap());
        assert!(refuse(&http::Method::POST, &h).is_none());
    }
}
