//! SCIM filters (RFC 7644 section 3.4.2.2): parsed once, then matched
//! against resources as they are answered (`?filter=`) or against the
//! values of a multi-valued attribute (a PATCH path's `emails[type eq
//! "work"]`). Strings compare without case except the identifiers (`id`,
//! `externalId`, a member's `value` and `$ref`), as the schema says.
use serde_json::{Map, Value};

use super::ScimError;

/// An attribute path: `userName`, `name.givenName`, `emails.value`, with
/// the schema's URN prefix (`urn:…:User:userName`) already taken off.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttrPath {
    pub attribute: String,
    pub sub: Option<String>,
}

impl AttrPath {
    pub fn parse(raw: &str) -> Result<AttrPath, ScimError> {
        let bad = || ScimError::invalid_path(format!("`{raw}` is not an attribute path"));
        let without_urn = match raw.rfind(':') {
            Some(at) if raw.to_ascii_lowercase().starts_with("urn:") => &raw[at + 1..],
            Some(_) => return Err(bad()),
            None => raw,
        };
        let (attribute, sub) = match without_urn.split_once('.') {
            Some((a, s)) => (a, Some(s)),
            None => (without_urn, None),
        };
        let name_ok = |n: &str| {
            let mut chars = n.chars();
            chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '$')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        };
        if !name_ok(attribute) || sub.is_some_and(|s| !name_ok(s)) {
            return Err(bad());
        }
        Ok(AttrPath { attribute: attribute.to_string(), sub: sub.map(str::to_string) })
    }

    fn case_exact(&self) -> bool {
        let exact = ["id", "externalId", "members"];
        exact.iter().any(|e| e.eq_ignore_ascii_case(&self.attribute)) || self.sub.as_deref() == Some("$ref")
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Co,
    Sw,
    Ew,
    Gt,
    Ge,
    Lt,
    Le,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Filter {
    Compare(AttrPath, Op, Value),
    Present(AttrPath),
    And(Box<Filter>, Box<Filter>),
    Or(Box<Filter>, Box<Filter>),
    Not(Box<Filter>),
    /// `emails[type eq "work"]`: some value of the attribute matches.
    Values(String, Box<Filter>),
}

/// The longest filter read.
const MAX_FILTER: usize = 4096;
/// How deep parentheses and `not` may nest.
const MAX_DEPTH: usize = 32;

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Word(String),
    Literal(Value),
    Open,
    Close,
    OpenBracket,
    CloseBracket,
}

fn tokens(text: &str) -> Result<Vec<Token>, ScimError> {
    let bad = |why: &str| ScimError::invalid_filter(why.to_string());
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' | '\n' | '\r' => i += 1,
            '(' | ')' | '[' | ']' => {
                out.push(match c {
                    '(' => Token::Open,
                    ')' => Token::Close,
                    '[' => Token::OpenBracket,
                    _ => Token::CloseBracket,
                });
                i += 1;
            }
            '"' => {
                let start = i;
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    i += if chars[i] == '\\' { 2 } else { 1 };
                }
                if i >= chars.len() {
                    return Err(bad("a string is not closed"));
                }
                i += 1;
                let literal: String = chars[start..i].iter().collect();
                let value: Value = serde_json::from_str(&literal).map_err(|_| bad("a string is not valid JSON"))?;
                out.push(Token::Literal(value));
            }
            _ => {
                let start = i;
                while i < chars.len() && !" \t\n\r()[]\"".contains(chars[i]) {
                    i += 1;
                }
                out.push(Token::Word(chars[start..i].iter().collect()));
            }
        }
    }
    Ok(out)
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Filter {
    pub fn parse(text: &str) -> Result<Filter, ScimError> {
        if text.len() > MAX_FILTER {
            return Err(ScimError::invalid_filter(format!("a filter is at most {MAX_FILTER} bytes")));
        }
        let mut parser = Parser { tokens: tokens(text)?, at: 0 };
        let filter = parser.or(0)?;
        if parser.at != parser.tokens.len() {
            return Err(ScimError::invalid_filter("the filter has words after its end".into()));
        }
        Ok(filter)
    }

    /// Whether `object` (a resource as answered, or one value of a
    /// multi-valued attribute) matches.
    pub fn matches(&self, object: &Map<String, Value>) -> bool {
        match self {
            Filter::And(a, b) => a.matches(object) && b.matches(object),
            Filter::Or(a, b) => a.matches(object) || b.matches(object),
            Filter::Not(inner) => !inner.matches(object),
            Filter::Present(path) => values_at(object, path).iter().any(|v| is_assigned(v)),
            Filter::Compare(path, op, wanted) => {
                let exact = path.case_exact();
                values_at(object, path).iter().any(|found| compare(found, *op, wanted, exact))
            }
            Filter::Values(attribute, inner) => match lookup(object, attribute) {
                Some(Value::Array(items)) => items.iter().filter_map(Value::as_object).any(|item| inner.matches(item)),
                Some(Value::Object(item)) => inner.matches(item),
                _ => false,
            },
        }
    }
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn next(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.at).cloned();
        self.at += 1;
        token
    }

    fn keyword(&self, word: &str) -> bool {
        matches!(self.peek(), Some(Token::Word(w)) if w.eq_ignore_ascii_case(word))
    }

    fn or(&mut self, depth: usize) -> Result<Filter, ScimError> {
        let mut left = self.and(depth)?;
        while self.keyword("or") {
            self.at += 1;
            left = Filter::Or(Box::new(left), Box::new(self.and(depth)?));
        }
        Ok(left)
    }

    fn and(&mut self, depth: usize) -> Result<Filter, ScimError> {
        let mut left = self.factor(depth)?;
        while self.keyword("and") {
            self.at += 1;
            left = Filter::And(Box::new(left), Box::new(self.factor(depth)?));
        }
        Ok(left)
    }

    fn factor(&mut self, depth: usize) -> Result<Filter, ScimError> {
        if depth > MAX_DEPTH {
            return Err(ScimError::invalid_filter(format!("a filter nests at most {MAX_DEPTH} deep")));
        }
        if self.keyword("not") {
            self.at += 1;
            self.expect(Token::Open)?;
            let inner = self.or(depth + 1)?;
            self.expect(Token::Close)?;
            return Ok(Filter::Not(Box::new(inner)));
        }
        if self.peek() == Some(&Token::Open) {
            self.at += 1;
            let inner = self.or(depth + 1)?;
            self.expect(Token::Close)?;
            return Ok(inner);
        }
        let Some(Token::Word(word)) = self.next() else {
            return Err(ScimError::invalid_filter("an attribute path was expected".into()));
        };
        if self.peek() == Some(&Token::OpenBracket) {
            self.at += 1;
            let path = AttrPath::parse(&word).map_err(|e| ScimError::invalid_filter(e.detail))?;
            let inner = self.or(depth + 1)?;
            self.expect(Token::CloseBracket)?;
            return Ok(Filter::Values(path.attribute, Box::new(inner)));
        }
        let path = AttrPath::parse(&word).map_err(|e| ScimError::invalid_filter(e.detail))?;
        let Some(Token::Word(op)) = self.next() else {
            return Err(ScimError::invalid_filter(format!("an operator was expected after `{word}`")));
        };
        let op = match op.to_ascii_lowercase().as_str() {
            "pr" => return Ok(Filter::Present(path)),
            "eq" => Op::Eq,
            "ne" => Op::Ne,
            "co" => Op::Co,
            "sw" => Op::Sw,
            "ew" => Op::Ew,
            "gt" => Op::Gt,
            "ge" => Op::Ge,
            "lt" => Op::Lt,
            "le" => Op::Le,
            _ => return Err(ScimError::invalid_filter(format!("`{op}` is not an operator"))),
        };
        let value = match self.next() {
            Some(Token::Literal(value)) => value,
            Some(Token::Word(word)) => match word.as_str() {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                "null" => Value::Null,
                number => serde_json::from_str::<serde_json::Number>(number)
                    .map(Value::Number)
                    .map_err(|_| ScimError::invalid_filter(format!("`{number}` is not a value")))?,
            },
            _ => return Err(ScimError::invalid_filter("a value was expected".into())),
        };
        Ok(Filter::Compare(path, op, value))
    }

    fn expect(&mut self, wanted: Token) -> Result<(), ScimError> {
        match self.next() {
            Some(found) if found == wanted => Ok(()),
            _ => Err(ScimError::invalid_filter("a bracket or parenthesis is not closed".into())),
        }
    }
}

/// A key of `object` compared without case.
pub fn lookup<'a>(object: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    object.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v)
}

/// The values a path reaches: through a multi-valued attribute, each
/// value's sub-attribute (or `value` where the path names none).
fn values_at<'a>(object: &'a Map<String, Value>, path: &AttrPath) -> Vec<&'a Value> {
    let Some(top) = lookup(object, &path.attribute) else { return Vec::new() };
    let of_item = |item: &'a Value| -> Option<&'a Value> {
        match (&path.sub, item) {
            (Some(sub), Value::Object(fields)) => lookup(fields, sub),
            (None, Value::Object(fields)) => lookup(fields, "value"),
            (None, other) => Some(other),
            (Some(_), _) => None,
        }
    };
    match top {
        Value::Array(items) => items.iter().filter_map(of_item).collect(),
        other => of_item(other).into_iter().collect(),
    }
}

fn is_assigned(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Array(items) => !items.is_empty(),
        Value::String(s) => !s.is_empty(),
        _ => true,
    }
}

fn compare(found: &Value, op: Op, wanted: &Value, exact: bool) -> bool {
    match (found, wanted) {
        (Value::String(found), Value::String(wanted)) => {
            let (found, wanted) =
                if exact { (found.clone(), wanted.clone()) } else { (found.to_lowercase(), wanted.to_lowercase()) };
            match op {
                Op::Eq => found == wanted,
                Op::Ne => found != wanted,
                Op::Co => found.contains(&wanted),
                Op::Sw => found.starts_with(&wanted),
                Op::Ew => found.ends_with(&wanted),
                Op::Gt => found > wanted,
                Op::Ge => found >= wanted,
                Op::Lt => found < wanted,
                Op::Le => found <= wanted,
            }
        }
        (found, wanted) => match op {
            Op::Eq => found == wanted,
            Op::Ne => found != wanted,
            _ => false,
        },
    }
}

/// `userName eq "…"` (or the Group's `displayName`), `externalId eq "…"`,
/// `id eq "…"`: the filters a directory sends before it creates, which
/// the store answers from an index instead of reading the directory.
pub enum Indexed {
    Key(String),
    ExternalId(String),
}

impl Filter {
    pub fn indexed(&self, key_attribute: &str) -> Option<Indexed> {
        let Filter::Compare(path, Op::Eq, Value::String(value)) = self else { return None };
        if path.sub.is_some() {
            return None;
        }
        if path.attribute.eq_ignore_ascii_case(key_attribute) {
            Some(Indexed::Key(value.to_lowercase()))
        } else if path.attribute.eq_ignore_ascii_case("externalId") {
            Some(Indexed::ExternalId(value.clone()))
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn user() -> Map<String, Value> {
        json!({
            "id": "0190",
            "userName": "Ada@Example.com",
            "externalId": "E-1",
            "name": {"givenName": "Ada"},
            "emails": [{"value": "ada@example.com", "type": "work"}, {"value": "a@home.org", "type": "home"}],
            "active": true,
            "meta": {"lastModified": "2026-11-29T10:00:00Z"},
        })
        .as_object()
        .unwrap()
        .clone()
    }

    fn matches(filter: &str) -> bool {
        Filter::parse(filter).unwrap().matches(&user())
    }

    #[test]
    fn the_rfc_forms_match_as_the_rfc_says() {
        assert!(matches(r#"userName eq "ada@example.com""#));
        assert!(matches(r#"urn:ietf:params:scim:schemas:core:2.0:User:userName Eq "ADA@example.com""#));
        assert!(!matches(r#"externalId eq "e-1""#));
        assert!(matches(r#"externalId eq "E-1""#));
        assert!(matches(r#"name.givenName sw "A" and active eq true"#));
        assert!(matches(r#"emails[type eq "home" and value ew ".org"]"#));
        assert!(!matches(r#"emails[type eq "home" and value ew ".com"]"#));
        assert!(matches(r#"emails co "home.org""#));
        assert!(matches(r#"emails.type eq "work" or userName eq "x""#));
        assert!(matches(r#"not (displayName pr) and meta.lastModified gt "2026-01-01T00:00:00Z""#));
        assert!(!matches(r#"(userName eq "x" or active eq false)"#));
    }

    #[test]
    fn malformed_filters_are_refused_as_invalid_filter() {
        for bad in [
            r#"userName eq"#,
            r#"userName zz "a""#,
            r#"userName eq "a"#,
            r#"(userName eq "a""#,
            r#"userName eq "a" extra"#,
            r#"emails[type eq "work""#,
            r#"1abc eq "a""#,
            r#"userName eq bare"#,
        ] {
            assert_eq!(Filter::parse(bad).unwrap_err().scim_type, Some("invalidFilter"), "{bad}");
        }
        let deep = format!("{}userName pr{}", "(".repeat(40), ")".repeat(40));
        assert!(Filter::parse(&deep).is_err());
    }

    #[test]
    fn the_lookups_a_directory_makes_before_creating_use_an_index() {
        let indexed = Filter::parse(r#"USERNAME eq "Ada@Example.com""#).unwrap().indexed("userName");
        assert!(matches!(indexed, Some(Indexed::Key(k)) if k == "ada@example.com"));
        let indexed = Filter::parse(r#"externalId eq "E-1""#).unwrap().indexed("userName");
        assert!(matches!(indexed, Some(Indexed::ExternalId(k)) if k == "E-1"));
        assert!(Filter::parse(r#"userName co "a""#).unwrap().indexed("userName").is_none());
    }
}
