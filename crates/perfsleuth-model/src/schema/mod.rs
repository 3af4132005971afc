//! The typed schema of every JSON document perfsleuth writes or reads.
//!
//! Each document is a struct here with a `schema` name and a
//! `schema_version`; [`Document`] ties the two to the type, and
//! [`json_schema`] generates the JSON Schema committed under `docs/schema/`
//! (a test fails when the committed files differ from the types). The
//! producers (report, compare, scale, probe, env and the binary) build these
//! structs; nothing builds an output document from untyped JSON.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A versioned JSON document: its `schema` name and layout version.
pub trait Document: Serialize + DeserializeOwned + JsonSchema {
    /// The `schema` field's value ("perfsleuth/run").
    const SCHEMA: &'static str;
    /// The `schema_version` this perfsleuth writes and reads.
    const VERSION: u32;
    /// The file under `docs/schema/` that holds its JSON Schema, without
    /// the `.schema.json` extension ("run").
    fn file_stem() -> &'static str {
        Self::SCHEMA.trim_start_matches("perfsleuth/")
    }
}

/// The JSON Schema of a document, as committed under `docs/schema/`.
pub fn json_schema<D: Document>() -> serde_json::Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(D)).unwrap_or_default();
    // The header fields are a plain string and integer in the types; the
    // schema pins them so a validator tells the documents apart.
    if let Some(props) = schema.get_mut("properties").and_then(|p| p.as_object_mut()) {
        props.insert(
            "schema".into(),
            serde_json::json!({ "const": D::SCHEMA, "description": "The document's name." }),
        );
        props.insert(
            "schema_version".into(),
            serde_json::json!({ "const": D::VERSION, "description": "The document's layout version." }),
        );
    }
    schema
}

/// Every document's file stem and JSON Schema, in the order `docs/SCHEMA.md` lists them.
pub fn all_json_schemas() -> Vec<(&'static str, serde_json::Value)> {
    fn one<D: Document>() -> (&'static str, serde_json::Value) {
        (D::file_stem(), json_schema::<D>())
    }
    vec![
        one::<RunExport>(),
        one::<RunsDoc>(),
        one::<HistoryDoc>(),
        one::<CompareDoc>(),
        one::<ExplainDoc>(),
        one::<BisectDoc>(),
        one::<ScaleDoc>(),
        one::<ProbeDoc>(),
        one::<ProbeDiffDoc>(),
        one::<EnvironmentDoc>(),
        one::<EnvDiffDoc>(),
        one::<EnvCheckDoc>(),
        one::<IngestDoc>(),
        one::<RunBatchDoc>(),
        one::<IngestBatchDoc>(),
        one::<RunUuidsDoc>(),
        one::<HeldDoc>(),
        one::<ApiErrorDoc>(),
        one::<HealthDoc>(),
        one::<TokensDoc>(),
        one::<PushDoc>(),
    ]
}

/// JSON Schemas of the documents perfsleuth writes in another tool's shape
/// (no `schema` header: that tool's readers would not expect one), by file stem.
pub fn foreign_json_schemas() -> Vec<(&'static str, serde_json::Value)> {
    vec![(
        "hyperfine",
        serde_json::to_value(schemars::schema_for!(HyperfineDoc)).unwrap_or_default(),
    )]
}

/// A document as pretty-printed JSON text with a final newline.
///
/// Goes through `serde_json::Value` so object keys come out sorted, as
/// perfsleuth has always written them (byte-stable output for diffs and tests).
pub fn to_json_pretty<T: Serialize>(doc: &T) -> Result<String, serde_json::Error> {
    let value = serde_json::to_value(doc)?;
    Ok(serde_json::to_string_pretty(&value)? + "\n")
}

/// Why a file could not be read as a document.
#[derive(Debug)]
pub enum ReadError {
    /// Not JSON at all.
    NotJson(serde_json::Error),
    /// JSON, but its `schema` is another document's (or missing: `None`).
    WrongSchema(Option<String>),
    /// The right document in a layout version this perfsleuth does not read (`None`: missing).
    WrongVersion(Option<u64>),
    /// The right document and version, but a field does not fit the type.
    Malformed(serde_json::Error),
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::NotJson(e) => write!(f, "not JSON: {e}"),
            ReadError::WrongSchema(s) => match s {
                Some(s) => write!(f, "a `{s}` document"),
                None => f.write_str("no \"schema\" field"),
            },
            ReadError::WrongVersion(v) => match v {
                Some(v) => write!(f, "schema version {v}"),
                None => f.write_str("schema version missing"),
            },
            ReadError::Malformed(e) => write!(f, "malformed: {e}"),
        }
    }
}

impl std::error::Error for ReadError {}

/// The `schema` and `schema_version` of any document, to tell which one a file holds.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Header {
    /// The `schema` field, when present and a string.
    #[serde(default, deserialize_with = "lenient_string")]
    pub schema: Option<String>,
    /// The `schema_version` field, when present and an integer.
    #[serde(default, deserialize_with = "lenient_u64")]
    pub schema_version: Option<u64>,
}

fn lenient_string<'de, D: serde::Deserializer<'de>>(de: D) -> Result<Option<String>, D::Error> {
    Ok(serde_json::Value::deserialize(de)?
        .as_str()
        .map(str::to_string))
}

fn lenient_u64<'de, D: serde::Deserializer<'de>>(de: D) -> Result<Option<u64>, D::Error> {
    Ok(serde_json::Value::deserialize(de)?.as_u64())
}

/// Parses JSON text into a [`Header`] and the whole value.
pub fn read_header(text: &str) -> Result<(Header, serde_json::Value), ReadError> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(ReadError::NotJson)?;
    let header = Header::deserialize(&value).unwrap_or_default();
    Ok((header, value))
}

/// Reads a document of type `D`, checking its `schema` and `schema_version` first.
///
/// The text is parsed straight into `D` (after a first pass that reads only
/// the header), never through a `serde_json::Value` tree: an export of
/// 200 000 samples builds 200 000 maps that way, most of the time a
/// `compare` of two such files took.
pub fn read_document<D: Document>(text: &str) -> Result<D, ReadError> {
    let header = match serde_json::from_str::<Header>(text) {
        Ok(h) => h,
        Err(e) if e.is_syntax() || e.is_eof() => return Err(ReadError::NotJson(e)),
        // JSON, but not an object with that header: no schema.
        Err(_) => Header::default(),
    };
    check_header::<D>(&header)?;
    serde_json::from_str(text).map_err(ReadError::Malformed)
}

fn check_header<D: Document>(header: &Header) -> Result<(), ReadError> {
    if header.schema.as_deref() != Some(D::SCHEMA) {
        return Err(ReadError::WrongSchema(header.schema.clone()));
    }
    if header.schema_version != Some(u64::from(D::VERSION)) {
        return Err(ReadError::WrongVersion(header.schema_version));
    }
    Ok(())
}

/// Turns an already-parsed value into a document of type `D`, checking its header.
pub fn document_from_value<D: Document>(
    header: &Header,
    value: serde_json::Value,
) -> Result<D, ReadError> {
    check_header::<D>(header)?;
    serde_json::from_value(value).map_err(ReadError::Malformed)
}

/// Ties a document type to its `schema` name and version ([`Document`]).
macro_rules! document {
    ($t:ty, $name:literal, $version:expr) => {
        impl $crate::schema::Document for $t {
            const SCHEMA: &'static str = $name;
            const VERSION: u32 = $version;
        }
    };
}

// After `document!`: the documents use it.
mod bisect;
mod compare;
mod env;
mod explain;
mod history;
mod hyperfine;
mod probe;
mod run_export;
mod run_options;
mod runs;
mod scale;
mod server;
pub use bisect::*;
pub use compare::*;
pub use env::*;
pub use explain::*;
pub use history::*;
pub use hyperfine::*;
pub use probe::*;
pub use run_export::*;
pub use run_options::*;
pub use runs::*;
pub use scale::*;
pub use server::*;

#[cfg(test)]
mod verdict_label_tests {
    use super::VerdictLabel;

    #[test]
    fn the_printed_label_is_the_json_name() {
        for v in VerdictLabel::ALL {
            assert_eq!(serde_json::to_value(v).unwrap(), v.as_str());
        }
    }
}
