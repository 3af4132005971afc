//! The team server's administration: projects and their tokens.

use crate::ProjectInfo;
use crate::TokenRecord;
use crate::error::StoreError;
use crate::queries::to_u64;
use crate::queries::write::first_int;
use crate::sql::Db;
use crate::sql::Row;
use crate::sql::vals;

/// [`crate::Store::projects`]: those created and those holding runs.
pub(crate) fn projects<D: Db + ?Sized>(db: &D) -> Result<Vec<ProjectInfo>, StoreError> {
    let rows = db.query(
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

/// [`crate::Store::public_read`].
pub(crate) fn public_read<D: Db + ?Sized>(db: &D, name: &str) -> Result<Option<bool>, StoreError> {
    db.query(
        "SELECT public_read FROM projects WHERE name = ?1",
        &vals![name],
    )?
    .first()
    .map(|r| r.bool(0))
    .transpose()
}

/// [`crate::Store::ensure_project`].
pub(crate) fn ensure_project<D: Db + ?Sized>(
    db: &D,
    name: &str,
    created_at: &str,
) -> Result<(), StoreError> {
    db.execute(
        "INSERT INTO projects (name, public_read, created_at) VALUES (?1, ?2, ?3) \
         ON CONFLICT (name) DO NOTHING",
        &vals![name, false, created_at],
    )?;
    Ok(())
}

/// [`crate::Store::set_public_read`].
pub(crate) fn set_public_read<D: Db + ?Sized>(
    db: &D,
    name: &str,
    public: bool,
) -> Result<(), StoreError> {
    let changed = db.execute(
        "UPDATE projects SET public_read = ?1 WHERE name = ?2",
        &vals![public, name],
    )?;
    if changed == 0 {
        return Err(StoreError::NoProject(name.to_string()));
    }
    Ok(())
}

/// [`crate::Store::add_token`].
pub(crate) fn add_token<D: Db + ?Sized>(db: &D, t: &TokenRecord) -> Result<i64, StoreError> {
    let rows = db.query(
        "INSERT INTO tokens (project, name, hash, scopes, created_at) \
         VALUES (?1, ?2, ?3, ?4, ?5) RETURNING id",
        &vals![
            t.project.as_str(),
            t.name.as_str(),
            t.hash.as_str(),
            t.scopes.join(","),
            t.created_at.as_str()
        ],
    )?;
    first_int(&rows)
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

/// [`crate::Store::tokens`].
pub(crate) fn tokens<D: Db + ?Sized>(
    db: &D,
    project: Option<&str>,
) -> Result<Vec<TokenRecord>, StoreError> {
    let rows = match project {
        Some(p) => db.query(
            &format!("SELECT {TOKEN_COLUMNS} FROM tokens WHERE project = ?1 ORDER BY id"),
            &vals![p],
        )?,
        None => db.query(
            &format!("SELECT {TOKEN_COLUMNS} FROM tokens ORDER BY id"),
            &[],
        )?,
    };
    rows.iter().map(token_from).collect()
}

/// [`crate::Store::token_by_hash`].
pub(crate) fn token_by_hash<D: Db + ?Sized>(
    db: &D,
    hash: &str,
) -> Result<Option<TokenRecord>, StoreError> {
    db.query(
        &format!("SELECT {TOKEN_COLUMNS} FROM tokens WHERE hash = ?1"),
        &vals![hash],
    )?
    .first()
    .map(token_from)
    .transpose()
}

/// [`crate::Store::revoke_token`]: true when a live token was revoked.
pub(crate) fn revoke_token<D: Db + ?Sized>(
    db: &D,
    id: i64,
    revoked_at: &str,
) -> Result<bool, StoreError> {
    Ok(db.execute(
        "UPDATE tokens SET revoked_at = ?1 WHERE id = ?2 AND revoked_at IS NULL",
        &vals![revoked_at, id],
    )? > 0)
}
