//! The JSON Schemas under `docs/schema/` are generated from the types in
//! `perfsleuth_model::schema`; this test regenerates them and fails when a
//! committed file differs, so a type change cannot ship without its schema.
//! `PERFSLEUTH_BLESS=1 cargo test -p perfsleuth-model --test schema_files`
//! rewrites the files instead.

use perfsleuth_model::schema::{all_json_schemas, foreign_json_schemas};
use std::path::PathBuf;

fn schema_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/schema")
}

fn text(schema: &serde_json::Value) -> String {
    serde_json::to_string_pretty(schema).expect("a schema serialises") + "\n"
}

#[test]
fn committed_schemas_match_the_types() {
    let dir = schema_dir();
    let bless = std::env::var_os("PERFSLEUTH_BLESS").is_some_and(|v| v == "1");
    let mut stale = Vec::new();
    for (stem, schema) in all_json_schemas().into_iter().chain(foreign_json_schemas()) {
        let path = dir.join(format!("{stem}.schema.json"));
        let want = text(&schema);
        if bless {
            std::fs::create_dir_all(&dir).expect("create docs/schema");
            std::fs::write(&path, &want).expect("write a schema file");
            continue;
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        if have != want {
            stale.push(path.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "these JSON Schemas differ from the types in perfsleuth_model::schema: {stale:?}\n\
         regenerate them with `PERFSLEUTH_BLESS=1 cargo test -p perfsleuth-model --test schema_files` \
         and commit the result (and document the change in docs/SCHEMA.md)"
    );
}

#[test]
fn every_file_under_docs_schema_is_generated() {
    let known: Vec<String> = all_json_schemas()
        .into_iter()
        .chain(foreign_json_schemas())
        .map(|(stem, _)| format!("{stem}.schema.json"))
        .collect();
    let Ok(entries) = std::fs::read_dir(schema_dir()) else {
        return; // committed_schemas_match_the_types says what to do.
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        assert!(
            known.contains(&name),
            "docs/schema/{name} is not generated from any type: remove it or add its document to all_json_schemas()"
        );
    }
}

#[test]
fn every_schema_pins_its_name_and_version() {
    for (stem, schema) in all_json_schemas() {
        assert_eq!(
            schema["properties"]["schema"]["const"],
            format!("perfsleuth/{stem}"),
            "{stem}"
        );
        assert!(
            schema["properties"]["schema_version"]["const"].is_u64(),
            "{stem}"
        );
        let required: Vec<&str> = schema["required"]
            .as_array()
            .expect("required")
            .iter()
            .filter_map(|v| v.as_str())
            .collect();
        assert!(
            required.contains(&"schema") && required.contains(&"schema_version"),
            "{stem}: {required:?}"
        );
    }
}
