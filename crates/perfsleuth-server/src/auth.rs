//! API tokens: their secrets, scopes, and the decision whether a request
//! may do what it asks.
//!
//! A secret is `pst_` and 64 hex digits (256 random bits); the store keeps
//! only its SHA-256, so a leaked database opens nothing. The hash is looked
//! up by equality in the database; with 256-bit secrets there is nothing to
//! gain from timing that comparison.

use crate::ApiError;
use perfsleuth_store::{Admin, TokenRecord};

/// What a token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Upload runs.
    Ingest,
    /// Read runs, comparisons, history, environment diffs.
    Read,
    /// Everything, now and as scopes are added.
    Admin,
}

impl Scope {
    /// Its name in `--scope` and in the store.
    pub fn name(self) -> &'static str {
        match self {
            Scope::Ingest => "ingest",
            Scope::Read => "read",
            Scope::Admin => "admin",
        }
    }

    /// Parses a scope name.
    pub fn parse(s: &str) -> Option<Scope> {
        match s {
            "ingest" => Some(Scope::Ingest),
            "read" => Some(Scope::Read),
            "admin" => Some(Scope::Admin),
            _ => None,
        }
    }
}

/// The prefix that marks a perfsleuth token (and lets secret scanners find one).
pub const TOKEN_PREFIX: &str = "pst_";

/// A new random secret.
pub fn new_secret() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(format!(
        "{TOKEN_PREFIX}{}",
        perfsleuth_model::hex::encode(&bytes)
    ))
}

/// The stored form of a secret: its SHA-256, hex.
pub fn hash_secret(secret: &str) -> String {
    perfsleuth_store::sha256_hex(secret.as_bytes())
}

pub use perfsleuth_store::valid_project;

/// Decides whether a request with `bearer` (the `Authorization: Bearer`
/// secret or the dashboard's cookie, if any) may act with `scope` on
/// `project`. Reads of a public project are open to everyone, whatever
/// token came along (a token of another project included); everything else
/// needs a valid, unrevoked token of that project with the scope (or
/// `admin`): 401 without one, 403 with a valid token that does not allow
/// it. A project that does not exist is answered like a private one, so
/// names cannot be probed.
pub fn authorize(
    store: &(impl Admin + ?Sized),
    project: &str,
    bearer: Option<&str>,
    scope: Scope,
) -> Result<Option<TokenRecord>, ApiError> {
    if !valid_project(project) {
        return Err(ApiError::bad_request(
            format!("{project:?} is not a project name"),
            "project names are 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit",
        ));
    }
    let token = match bearer {
        Some(secret) => store.token_by_hash(&hash_secret(secret))?,
        None => None,
    };
    if scope == Scope::Read && store.public_read(project)? == Some(true) {
        return Ok(token.filter(|t| t.revoked_at.is_none() && t.project == project));
    }
    let token = match token {
        Some(t) if t.revoked_at.is_none() => t,
        Some(_) => return Err(ApiError::unauthorized("this token was revoked")),
        None if bearer.is_some() => return Err(ApiError::unauthorized("this token is not valid")),
        None => {
            return Err(ApiError::unauthorized(
                "this request needs a token (Authorization: Bearer …)",
            ));
        }
    };
    if token.project != project {
        return Err(ApiError::forbidden(
            format!(
                "this token opens project {:?}, not {project:?}",
                token.project
            ),
            "use a token of this project",
        ));
    }
    let allowed = token
        .scopes
        .iter()
        .any(|s| s == scope.name() || s == Scope::Admin.name());
    if !allowed {
        return Err(ApiError::forbidden(
            format!(
                "this token's scopes ({}) do not include {}",
                token.scopes.join(", "),
                scope.name()
            ),
            format!(
                "create a token with --scope {}: perfsleuth server token create --project {project} --scope {}",
                scope.name(),
                scope.name()
            ),
        ));
    }
    Ok(Some(token))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_random_prefixed_and_hash_to_hex() {
        let a = new_secret().unwrap();
        let b = new_secret().unwrap();
        assert_ne!(a, b);
        assert!(a.starts_with(TOKEN_PREFIX) && a.len() == 4 + 64, "{a}");
        let h = hash_secret(&a);
        assert_eq!(h.len(), 64);
        assert_ne!(h, hash_secret(&b));
        // The SHA-256 of "abc", a published test vector.
        assert_eq!(
            hash_secret("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn project_names_refuse_traversal_and_markup() {
        for ok in ["perfsleuth", "a", "my-app_2.0", &"x".repeat(64)] {
            assert!(valid_project(ok), "{ok}");
        }
        for bad in [
            "",
            "..",
            ".hidden",
            "a/b",
            "a b",
            "<script>",
            "a'; DROP TABLE runs; --",
            "é",
            &"x".repeat(65),
        ] {
            assert!(!valid_project(bad), "{bad}");
        }
    }
}
