// How 0.x reads an event id: `EventId::from_str`, the value's `Display` or
// the error's variant, for the behaviour test to compare both sides.

pub mod parse_0x {
    use super::rmcp;

    /// `text` read as 0.x's `EventId`: `Ok` with its `Display`, or the
    /// error's variant name.
    pub fn event_id(text: &str) -> Result<String, &'static str> {
        use rmcp::transport::streamable_http_server::session::local::{
            EventId, EventIdParseError,
        };
        match text.parse::<EventId>() {
            Ok(id) => Ok(id.to_string()),
            Err(EventIdParseError::InvalidIndex(_)) => Err("InvalidIndex"),
            Err(EventIdParseError::InvalidNumericRequestId(_)) => Err("InvalidNumericRequestId"),
            Err(EventIdParseError::InvalidRequestIdType) => Err("InvalidRequestIdType"),
            Err(EventIdParseError::MissingRequestId) => Err("MissingRequestId"),
        }
    }
}
