//! The shortcut against upstream's parse as the reference: for every message,
//! both give the same value or both refuse. Values are compared by their
//! `Debug` text, which names every variant and field (`ServerResult` has no
//! `PartialEq`).
//!
//! Messages are written as text, not through `serde_json::Value`, so that a
//! key can appear twice and a value can be one that `Value` cannot hold
//! (`1e400`, a lone surrogate, nesting past serde_json's limit).

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};

use super::{TABLE_READ_FOR, numbers_are_plain, parse_response, tool_answer};
use crate::model::{JsonRpcMessage, ServerJsonRpcMessage, ServerResult};

/// The keys the shortcut admits in a result (`ResultKey`'s), written out
/// here so that the tests say on their own what they expect.
const TOOL_RESULT_KEYS: [&str; 4] = ["content", "structuredContent", "isError", "_meta"];

/// JSON as text: objects keep their keys' order and repeats.
#[derive(Clone, Debug)]
enum Json {
    /// A scalar or any other text, written as it is.
    Raw(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    fn raw(text: &str) -> Self {
        Self::Raw(text.to_owned())
    }

    fn object(entries: &[(&str, Json)]) -> Self {
        Self::Object(
            entries
                .iter()
                .map(|(key, value)| ((*key).to_owned(), value.clone()))
                .collect(),
        )
    }

    fn write(&self, out: &mut String) {
        match self {
            Self::Raw(text) => out.push_str(text),
            Self::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write(out);
                }
                out.push(']');
            }
            Self::Object(entries) => {
                out.push('{');
                for (i, (key, value)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&serde_json::Value::from(key.as_str()).to_string());
                    out.push(':');
                    value.write(out);
                }
                out.push('}');
            }
        }
    }

    fn text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }
}

/// Both parses, compared. Returns whether the shortcut took the message.
fn assert_parses_as_upstream(data: &str) -> bool {
    let reference = serde_json::from_str::<ServerJsonRpcMessage>(data);
    let ours = parse_response(data);
    match (&reference, &ours) {
        (Ok(reference), Ok(ours)) => {
            assert_eq!(format!("{ours:?}"), format!("{reference:?}"), "{data}")
        }
        (Err(_), Err(_)) => {}
        _ => panic!("{data}: upstream gave {reference:?}, the shortcut path {ours:?}"),
    }
    tool_answer(data).is_some()
}

fn config(cases: u32, seed: u64) -> Config {
    Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        ..Config::default()
    }
}

/// Scalars, now and then one that upstream's buffer refuses.
fn scalar() -> impl Strategy<Value = Json> {
    let plain = prop::sample::select(vec![
        "null",
        "true",
        "false",
        "0",
        "-1",
        "1.0",
        "0.5",
        "1e2",
        "18446744073709551616",
        "\"\"",
        "\"complete\"",
        "\"task\"",
        "\"text\"",
        "\"a\\u00e9\\n\"",
        "\"2.0\"",
    ]);
    let refused = prop::sample::select(vec!["1e400", "\"\\ud800\""]);
    prop_oneof![12 => plain, 1 => refused].prop_map(Json::raw)
}

/// Arbitrary JSON of small depth.
fn any_json() -> impl Strategy<Value = Json> {
    scalar().prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Json::Array),
            prop::collection::vec((key(), inner), 0..4).prop_map(Json::Object),
        ]
    })
}

/// Nesting past serde_json's limit of 128, or just under it.
fn deep() -> impl Strategy<Value = Json> {
    (120usize..135)
        .prop_map(|depth| Json::Raw(format!("{}{}", "[".repeat(depth), "]".repeat(depth))))
}

/// Keys of `ServerResult`'s variants, of the message, and one of nobody's.
fn key() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "content",
        "structuredContent",
        "isError",
        "_meta",
        "resultType",
        "tools",
        "action",
        "taskId",
        "contents",
        "messages",
        "completion",
        "protocolVersion",
        "type",
        "text",
        "jsonrpc",
        "id",
        "result",
        "method",
        "error",
        "other",
    ])
    .prop_map(str::to_owned)
}

/// A content block: mostly a well-formed one, sometimes one off in a place.
fn block() -> impl Strategy<Value = Json> {
    let text = prop_oneof![
        8 => prop::sample::select(vec!["\"hi\"", "\"\""]),
        1 => prop::sample::select(vec!["3", "null", "\"\\ud800\""]),
    ];
    let kind = prop_oneof![
        8 => Just("\"text\""),
        1 => prop::sample::select(vec!["\"image\"", "\"resource_link\"", "7"]),
    ];
    let extra = prop::option::weighted(
        0.25,
        (
            prop::sample::select(vec!["annotations", "text", "_meta", "other", "type"]),
            prop_oneof![4 => any_json(), 1 => deep()],
        ),
    );
    (kind, text, extra).prop_map(|(kind, text, extra)| {
        let mut entries = vec![
            ("type".to_owned(), Json::raw(kind)),
            ("text".to_owned(), Json::raw(text)),
        ];
        if let Some((key, value)) = extra {
            entries.push((key.to_owned(), value));
        }
        Json::Object(entries)
    })
}

/// A value for a result's key: the shape that key usually has, or anything.
fn result_value(name: &str) -> BoxedStrategy<Json> {
    let usual = match name {
        "content" => prop::collection::vec(block(), 0..3)
            .prop_map(Json::Array)
            .boxed(),
        "isError" => prop::sample::select(vec!["true", "false", "null"])
            .prop_map(Json::raw)
            .boxed(),
        "resultType" => prop::sample::select(vec!["\"complete\"", "\"task\"", "\"other\""])
            .prop_map(Json::raw)
            .boxed(),
        "_meta" => prop_oneof![
            Just(Json::object(&[])),
            Just(Json::object(&[(
                "io.modelcontextprotocol/subscriptionId",
                Json::raw("1")
            )])),
            prop::collection::vec((key(), any_json()), 0..3).prop_map(Json::Object),
        ]
        .boxed(),
        _ => any_json().boxed(),
    };
    prop_oneof![12 => usual, 1 => any_json(), 1 => deep()].boxed()
}

/// A result object: some of the shortcut's keys in any order, sometimes
/// with one more key, which may be another variant's or one already there.
fn result_object() -> impl Strategy<Value = Json> {
    let keys = prop::sample::subsequence(TOOL_RESULT_KEYS.to_vec(), 0..=TOOL_RESULT_KEYS.len())
        .prop_shuffle();
    let extra = prop::option::weighted(0.2, key());
    (keys, extra)
        .prop_flat_map(|(keys, extra)| {
            keys.into_iter()
                .map(str::to_owned)
                .chain(extra)
                .map(|name| (Just(name.clone()), result_value(&name)))
                .collect::<Vec<_>>()
        })
        .prop_map(Json::Object)
}

/// A message: mostly a response with the shortcut's keys, sometimes more,
/// fewer, or other values.
fn message() -> impl Strategy<Value = Json> {
    let jsonrpc = prop_oneof![8 => Just(Json::raw("\"2.0\"")), 1 => scalar()];
    let id = prop_oneof![
        3 => Just(Json::raw("7")),
        3 => Just(Json::raw("\"req-1\"")),
        1 => Just(Json::raw("7.0")),
        1 => scalar(),
    ];
    let result = prop_oneof![8 => result_object(), 1 => any_json()];
    let extra = prop::option::weighted(0.15, (key(), any_json()));
    (jsonrpc, id, result, extra, any::<u8>()).prop_map(|(jsonrpc, id, result, extra, order)| {
        let mut entries = vec![
            ("jsonrpc".to_owned(), jsonrpc),
            ("id".to_owned(), id),
            ("result".to_owned(), result),
        ];
        entries.rotate_left(usize::from(order) % 3);
        if let Some(entry) = extra {
            entries.insert(usize::from(order) % 4, entry);
        }
        Json::Object(entries)
    })
}

proptest! {
    #![proptest_config(config(4096, 0x2026_1205))]

    /// The reference check, on generated messages.
    #[test]
    fn every_message_parses_as_upstream_parses_it(message in message()) {
        assert_parses_as_upstream(&message.text());
    }
}

/// The generated messages reach the shortcut often, and upstream's parse
/// often: the property above is not passing on one side alone.
#[test]
fn generated_messages_take_both_paths() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    let mut runner = TestRunner::new(config(1, 0x2026_1205));
    let strategy = message();
    let (mut shortcut, mut tool_answers) = (0, 0);
    let total = 2000;
    for _ in 0..total {
        let Ok(tree) = strategy.new_tree(&mut runner) else {
            panic!("the generator failed");
        };
        let data = tree.current().text();
        if assert_parses_as_upstream(&data) {
            shortcut += 1;
        }
        if let Ok(JsonRpcMessage::Response(response)) =
            serde_json::from_str::<ServerJsonRpcMessage>(&data)
            && matches!(response.result, ServerResult::CallToolResult(_))
        {
            tool_answers += 1;
        }
    }
    assert!(
        shortcut > total / 8,
        "{shortcut} of {total} took the shortcut"
    );
    assert!(
        tool_answers > shortcut,
        "{tool_answers} tool answers, {shortcut} by the shortcut"
    );
}

/// Every set of the shortcut's keys, with `resultType` too, over a few
/// values each: the table in the module's docs, checked whole.
#[test]
fn every_key_set_parses_as_upstream() {
    let values: [(&str, &[&str]); 5] = [
        (
            "content",
            &["[]", r#"[{"type":"text","text":"x"}]"#, "null", "{}"],
        ),
        ("structuredContent", &["null", "{}", r#"{"tools":[]}"#, "3"]),
        ("isError", &["true", "null", "\"no\""]),
        (
            "_meta",
            &[
                "{}",
                r#"{"io.modelcontextprotocol/subscriptionId":1}"#,
                "null",
            ],
        ),
        (
            "resultType",
            &["\"complete\"", "\"task\"", "\"input_required\""],
        ),
    ];
    let mut checked = 0;
    for set in 0u32..(1 << values.len()) {
        let present: Vec<_> = values
            .iter()
            .enumerate()
            .filter(|(bit, _)| set & (1 << bit) != 0)
            .map(|(_, entry)| *entry)
            .collect();
        let combinations: usize = present.iter().map(|(_, v)| v.len()).product();
        for mut pick in 0..combinations {
            let mut result = Vec::new();
            for (key, choices) in &present {
                result.push(((*key).to_owned(), Json::raw(choices[pick % choices.len()])));
                pick /= choices.len();
            }
            let message = Json::object(&[
                ("jsonrpc", Json::raw("\"2.0\"")),
                ("id", Json::raw("1")),
                ("result", Json::Object(result)),
            ]);
            assert_parses_as_upstream(&message.text());
            checked += 1;
        }
    }
    assert_eq!(checked, 5 * 5 * 4 * 4 * 4);
}

/// What a tool's answer looks like on the wire takes the shortcut, and this
/// build reads numbers plainly, so the shortcut is live in these tests.
#[test]
fn an_ordinary_answer_takes_the_shortcut() {
    assert!(numbers_are_plain());
    let data = r#"{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"7"}],"isError":false}}"#;
    assert!(assert_parses_as_upstream(data));
}

/// A key twice in a typed place is upstream's to parse: a second `id`
/// fails the message, a second `content` or block field makes the result a
/// later variant. Twice in a `Value`, the last one wins on both paths.
#[test]
fn a_repeated_key_is_judged_as_upstream_judges_it() {
    for data in [
        r#"{"jsonrpc":"2.0","id":1,"id":2,"result":{"content":[]}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"content":[]}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a","text":"b"}]}}"#,
    ] {
        assert!(!assert_parses_as_upstream(data), "{data}");
    }
    let data = r#"{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"a":1,"a":2}}}"#;
    assert!(assert_parses_as_upstream(data));
    let Ok(JsonRpcMessage::Response(response)) = parse_response(data) else {
        panic!("{data} is an answer");
    };
    let ServerResult::CallToolResult(result) = response.result else {
        panic!("{data} is a tool's answer");
    };
    assert_eq!(result.structured_content, Some(serde_json::json!({"a": 2})));
}

/// A value that serde's buffer refuses is refused by both paths: under each
/// key the shortcut admits (which its first pass skips, so its second must
/// read it), inside a content block, and under a key it does not admit.
#[test]
fn what_upstreams_buffer_refuses_is_refused() {
    let deep = format!("{}{}", "[".repeat(130), "]".repeat(130));
    for data in [
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[{{"type":"text","text":"a","other":{deep}}}]}}}}"#
        ),
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a","other":1e400}]}}"#
            .to_owned(),
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a","other":"\ud800"}]}}"#
            .to_owned(),
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]},"other":1e400}"#.to_owned(),
        r#"{"jsonrpc":"\ud800","id":1,"result":{"content":[]}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":1e400,"result":{"content":[]}}"#.to_owned(),
        format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"structuredContent":{deep}}}}}"#),
        r#"{"jsonrpc":"2.0","id":1,"result":{"isError":true,"_meta":{"a":1e400}}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":1,"result":{"isError":true,"_meta":{"a":"\ud800"}}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]},"other":"\ud800"}"#.to_owned(),
    ] {
        assert!(serde_json::from_str::<ServerJsonRpcMessage>(&data).is_err());
        assert!(!assert_parses_as_upstream(&data), "{data}");
    }
}

/// Spellings and values at the edges: escaped keys, whitespace, a byte-order
/// mark, trailing text, ids at the edges of `i64`, block tags given as
/// numbers (which only the buffered path reads as a variant), and each kind
/// of block.
#[test]
fn edge_cases_parse_as_upstream() {
    let shortcut = [
        r#"{"jsonrpc":"2.0","id":1,"result":{"\u0063ontent":[]}}"#,
        r#"{"\u006asonrpc":"2.0","\u0069d":1,"result":{"\u005fmeta":{},"isError":true}}"#,
        " \n{ \"jsonrpc\" : \"2.0\" ,\t\"id\":1, \"result\":{\"content\":[]} }\r\n",
        r#"{"jsonrpc":"2.0","id":-0,"result":{"content":[]}}"#,
        r#"{"jsonrpc":"2.0","id":9223372036854775807,"result":{"content":[]}}"#,
        r#"{"jsonrpc":"2.0","id":-9223372036854775808,"result":{"content":[]}}"#,
        r#"{"jsonrpc":"2.0","id":1e2,"result":{"content":[]}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"}]}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"audio","data":"AAAA","mimeType":"audio/wav"}]}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"resource","resource":{"uri":"file:///a","text":"x"}}]}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"resource_link","uri":"file:///a","name":"a","size":1}]}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x","annotations":{"audience":["user"],"priority":1}}]}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x","annotations":{"audience":[{"user":null}]}}]}}"#,
    ];
    for data in shortcut {
        assert!(assert_parses_as_upstream(data), "{data}");
    }
    let refused_or_upstream = [
        "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}",
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}} x"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}{}"#,
        r#"{"jsonrpc":"2.0","id":9223372036854775808,"result":{"content":[]}}"#,
        r#"{"jsonrpc":"2.0","id":18446744073709551616,"result":{"content":[]}}"#,
        r#"{"jsonrpc":"2.0","id":1.5,"result":{"content":[]}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":0,"text":"x"}]}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":4,"uri":"file:///a","name":"a"}]}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[["text","x"]]}}"#,
        r#"["2.0",1,{"content":[]}]"#,
        r#"{"jsonrpc":"2.0","id":1,"result":[[]]}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"resource_link","uri":"file:///a","name":"a","size":1.0}]}}"#,
    ];
    for data in refused_or_upstream {
        assert!(!assert_parses_as_upstream(data), "{data}");
    }
}

/// The module's table of required keys was read from one upstream release;
/// moving upstream fails here until it is read again.
#[test]
fn the_table_was_read_for_this_upstream() {
    assert_eq!(TABLE_READ_FOR, crate::line::UPSTREAM_VERSION);
}
