//! Hashes of environments: the comparability hash shown to users and the
//! SHA-256 that deduplicates stored environments.

use perfsleuth_model::{Environment, ImpactClass};
use sha2::{Digest, Sha256};

/// The comparability hash: the first 12 hex digits of the SHA-256 of the
/// identity facts' keys and values. Equal hashes mean the same CPU, caches,
/// ISA, kernel release, libc and hypervisor; unknown facts count as the text
/// `unknown`, whatever the reason.
pub fn comparability_hash(env: &Environment) -> String {
    let identity: std::collections::BTreeMap<&str, &str> = env
        .facts_of(&[ImpactClass::Identity])
        .map(|(k, f)| (k.as_str(), f.value.as_str()))
        .collect();
    let canonical = serde_json::to_string(&identity).unwrap_or_default();
    sha256_hex(canonical.as_bytes())[..12].to_string()
}

/// Lowercase hex SHA-256.
pub fn sha256_hex(data: &[u8]) -> String {
    perfsleuth_model::hex::encode(&Sha256::digest(data))
}

/// Facts that identify a machine configuration; context facts change every run.
pub(crate) const STABLE_CLASSES: [ImpactClass; 2] =
    [ImpactClass::Identity, ImpactClass::Performance];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparability_depends_on_identity_facts_only() {
        let mut a = Environment::default();
        a.set("cpu.model", "X", ImpactClass::Identity);
        a.set("noise.loadavg", "0.1", ImpactClass::Context);
        let mut b = a.clone();
        b.set("noise.loadavg", "3.0", ImpactClass::Context);
        b.set("cpu.freq.governor", "powersave", ImpactClass::Performance);
        assert_eq!(comparability_hash(&a), comparability_hash(&b));
        b.set("cpu.model", "Y", ImpactClass::Identity);
        assert_ne!(comparability_hash(&a), comparability_hash(&b));
        assert_eq!(comparability_hash(&a).len(), 12);
    }

    #[test]
    fn sha256_hex_matches_a_known_digest() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
