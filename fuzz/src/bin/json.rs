//! AFL target: every JSON document perfsleuth reads back, through both readers.

use perfsleuth_model::schema::{
    self, Document, EnvironmentDoc, ProbeDoc, RunExport, document_from_value, read_header,
};

fn read<D: Document>(text: &str) {
    if let Ok(doc) = schema::read_document::<D>(text) {
        let again = schema::to_json_pretty(&doc).expect("what was read serialises");
        // What was read and written once reads back to the same text.
        let back: D = schema::read_document(&again).expect("reads back");
        assert_eq!(schema::to_json_pretty(&back).expect("serialises"), again);
    }
    if let Ok((header, value)) = read_header(text) {
        let _ = document_from_value::<D>(&header, value);
    }
}

fn main() {
    afl::fuzz!(|data: &[u8]| {
        if let Ok(text) = std::str::from_utf8(data) {
            read::<RunExport>(text);
            read::<EnvironmentDoc>(text);
            read::<ProbeDoc>(text);
        }
    });
}
