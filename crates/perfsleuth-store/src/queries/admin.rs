//! The team server's administration: projects and their tokens.

use crate::ProjectInfo;
use crate::TokenRecord;
use crate::error::StoreError;
use crate::queries::Backend;
use crate::queries::to_u64;
use crate::queries::write::first_int;
use crate::sql::Row;
use crate::sql::vals;

/// A team server's administration: its projects and their API tokens.
pub trait Admin: Backend {
    /// Whether a project's reads are public; `None` when there is no such project.
    fn public_read(&self, name: &str) -> Result<Option<bool>, StoreError> {
        self.query(
            "SELECT public_read FROM projects WHERE name = ?1",
            &vals![name],
        )?
        .first()
        .map(|r| r.bool(0))
        .transpose()
    }

    /// Every project created on this store, by name.
    fn projects(&self) -> Result<Vec<ProjectInfo>, StoreError> {
        let rows = self.query(
            "SELECT p.name, p.public_read, p.created_at, \
             (SELECT count(*) FROM runs r WHERE r.project = p.name) FROM projects p ORDER BY p.name",
            &[],
        )?;
        rows.iter()
            .map(|r| {
                Ok(ProjectInfo {
                    name: r.text(0)?,
                    public_read: r.bool(1)?,
                    created_at: r.text(2)?,
                    runs: to_u64(r.int(3)?),
                })
            })
            .collect()
    }

    /// Creates a project (private) unless it exists.
    fn ensure_project(&mut self, name: &str, created_at: &str) -> Result<(), StoreError> {
        self.execute(
            "INSERT INTO projects (name, public_read, created_at) VALUES (?1, ?2, ?3) \
             ON CONFLICT (name) DO NOTHING",
            &vals![name, false, created_at],
        )?;
        Ok(())
    }

    /// Makes a project's reads public (no token) or private again.
    fn set_public_read(&mut self, name: &str, public: bool) -> Result<(), StoreError> {
        let changed = self.execute(
            "UPDATE projects SET public_read = ?1 WHERE name = ?2",
            &vals![public, name],
        )?;
        if changed == 0 {
            return Err(StoreError::NoProject(name.to_string()));
        }
        Ok(())
    }

    /// Stores a new token (its `id` is ignored) and returns its id.
    fn add_token(&mut self, token: &TokenRecord) -> Result<i64, StoreError> {
        let rows = self.query(
            "INSERT INTO tokens (project, name, hash, scopes, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?5) RETURNING id",
            &vals![
                token.project.as_str(),
                token.name.as_str(),
                token.hash.as_str(),
                token.scopes.join(","),
                token.created_at.as_str()
            ],
        )?;
        first_int(&rows)
    }

    /// Tokens, of one project or of all, oldest first (revoked ones too).
    fn tokens(&self, project: Option<&str>) -> Result<Vec<TokenRecord>, StoreError> {
        let rows = match project {
            Some(p) => self.query(
                &format!("SELECT {TOKEN_COLUMNS} FROM tokens WHERE project = ?1 ORDER BY id"),
                &vals![p],
            )?,
            None => self.query(
                &format!("SELECT {TOKEN_COLUMNS} FROM tokens ORDER BY id"),
                &[],
            )?,
        };
        rows.iter().map(token_from).collect()
    }

    /// The token whose secret hashes to `hash`, revoked or not.
    fn token_by_hash(&self, hash: &str) -> Result<Option<TokenRecord>, StoreError> {
        self.query(
            &format!("SELECT {TOKEN_COLUMNS} FROM tokens WHERE hash = ?1"),
            &vals![hash],
        )?
        .first()
        .map(token_from)
        .transpose()
    }

    /// Revokes a token; false when there is no such valid token.
    fn revoke_token(&mut self, id: i64, revoked_at: &str) -> Result<bool, StoreError> {
        Ok(self.execute(
            "UPDATE tokens SET revoked_at = ?1 WHERE id = ?2 AND revoked_at IS NULL",
            &vals![revoked_at, id],
        )? > 0)
    }
}

pub(crate) fn token_from(r: &Row) -> Result<TokenRecord, StoreError> {
    Ok(TokenRecord {
        id: r.int(0)?,
        project: r.text(1)?,
        name: r.text(2)?,
        hash: r.text(3)?,
        scopes: r
            .text(4)?
            .split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
        created_at: r.text(5)?,
        revoked_at: r.opt_text(6)?,
    })
}

pub(crate) const TOKEN_COLUMNS: &str = "id, project, name, hash, scopes, created_at, revoked_at";
