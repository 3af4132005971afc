//! URLs as messages may show them: a store's PostgreSQL URL and a team
//! server's address both land in CI logs.

/// The URL as a message may show it: scheme, user, hosts and path; no
/// password and no query or fragment (a query may hold `password=`). Done on
/// the text, by the URL rule that user information ends at the authority's
/// last `@`, so a password holding an `@` is not half shown. A text without
/// `://` is not shown at all.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return "(a URL not shown)".into();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let path = tail.split(['?', '#']).next().unwrap_or("");
    let shown = match authority.rfind('@') {
        Some(at) => {
            let user = authority[..at].split(':').next().unwrap_or("");
            format!("{user}@{}", &authority[at + 1..])
        }
        None => authority.to_string(),
    };
    format!("{scheme}://{shown}{path}")
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn urls_are_shown_without_their_password() {
        let shown = redact("postgres://ci:s3cret@db.example:5433/perf");
        assert_eq!(shown, "postgres://ci@db.example:5433/perf");
        assert!(!redact("postgresql://u:pw@h/d").contains("pw"));
        // A password with an `@` (unencoded) is not half shown, nor one in the query.
        assert_eq!(
            redact("postgres://u:Tr0ub@dor@10.0.0.1/db"),
            "postgres://u@10.0.0.1/db"
        );
        assert_eq!(
            redact("postgres://h/db?password=hunter2"),
            "postgres://h/db"
        );
        assert_eq!(
            redact("http://u:secret@host:8080/x"),
            "http://u@host:8080/x"
        );
        assert_eq!(redact("http://host:8080"), "http://host:8080");
        assert!(!redact("https://a:b@c@d/").contains('b'));
        assert!(!redact("u:secret@host").contains("secret"));
    }
}
