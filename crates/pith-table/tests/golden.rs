//! Golden bytes: the table encodings in `docs/format.md` ("Tables") are
//! what the encoders write.

use pith_table::{keycode, rowcode, ColumnType, Schema, Value};

fn golden(name: &str) -> Vec<u8> {
    pith_enc::golden::block(include_str!("../../../docs/format.md"), name)
}

#[test]
fn table_encodings_match_docs() {
    let schema = Schema::from_json(
        r#"{"name": "g", "columns": [
            {"name": "id", "type": "u32"},
            {"name": "name", "type": "string"},
            {"name": "score", "type": "f64", "nullable": true},
            {"name": "note", "type": "string", "nullable": true}],
          "primary_key": ["id"],
          "indexes": [{"name": "by_name", "columns": ["name"]}]}"#,
    )
    .expect("schema");
    let row = [
        Value::UInt(7),
        Value::Text("a\0b".into()),
        Value::Float(-1.5),
        Value::Null,
    ];
    let key = keycode::encode_all(&row[..1], &[ColumnType::U32]);
    let cols: Vec<_> = schema.groups[0]
        .columns
        .iter()
        .map(|&c| &schema.columns[c])
        .collect();
    let values: Vec<_> = schema.groups[0].columns.iter().map(|&c| &row[c]).collect();
    let value = rowcode::encode(&values, &cols);
    let mut index = keycode::encode_all(&row[1..2], &[ColumnType::String]);
    index.extend_from_slice(&key);
    for (name, bytes) in [
        ("golden-table-key", &key),
        ("golden-table-row", &value),
        ("golden-table-index-key", &index),
    ] {
        assert_eq!(
            *bytes,
            golden(name),
            "docs drifted on {name}; encoder writes:\n{}",
            pith_enc::golden::hex(bytes)
        );
    }
}
