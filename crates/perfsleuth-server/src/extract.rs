//! Path and query extractors whose rejection is the API's `perfsleuth/error`
//! document instead of axum's plain text; the dashboard makes its own (an
//! error page) with the same macro, so this module knows no page.

use crate::ApiError;

/// Defines a path and a query extractor rejecting with `$rejection`, made
/// from the message by `$make`.
macro_rules! extractors {
    ($path:ident, $query:ident, $rejection:ty, $make:expr) => {
        use axum::extract::{FromRequestParts, Path, Query};
        use axum::http::request::Parts;
        use serde::de::DeserializeOwned;

        /// The request path's parameters, or the rejection.
        pub(crate) struct $path<T>(pub T);

        /// The request's query, or the rejection.
        pub(crate) struct $query<T>(pub T);

        impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for $path<T> {
            type Rejection = $rejection;

            async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, $rejection> {
                match Path::<T>::from_request_parts(parts, state).await {
                    Ok(Path(v)) => Ok($path(v)),
                    Err(e) => Err($make(format!("bad path: {}", e.body_text()))),
                }
            }
        }

        impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for $query<T> {
            type Rejection = $rejection;

            async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, $rejection> {
                match Query::<T>::from_request_parts(parts, state).await {
                    Ok(Query(v)) => Ok($query(v)),
                    Err(e) => Err($make(format!("bad query: {}", e.body_text()))),
                }
            }
        }
    };
}

pub(crate) use extractors;

extractors!(ApiPath, ApiQuery, ApiError, |m: String| {
    ApiError::bad_request(
        m,
        "see docs/SERVER.md for the API's paths and each endpoint's parameters",
    )
});
