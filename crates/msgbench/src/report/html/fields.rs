//! Reading a row of a results envelope back: its fields as text, and the
//! order placements are shown in. Every section and its answers read rows
//! through these.

use serde_json::Value;

/// A row's field as text (a string, or a number written out), "" if absent.
pub fn field(row: &Value, name: &str) -> String {
    match row.get(name) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

/// Same CPU first, as the terminal prints them.
pub fn placement_order(p: &str) -> (u8, String) {
    (u8::from(p != "same"), p.to_string())
}
