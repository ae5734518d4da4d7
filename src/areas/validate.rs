//! Checks shared by every area's input: they collect field issues so one
//! answer names every problem.
use crate::error::{ApiError, FieldIssue};

/// A request's field issues, all of them (422 `validation_failed`). Every
/// area whose input is checked has it as a variant, so one answer shape
/// names them.
#[derive(Debug, thiserror::Error)]
#[error("invalid fields: {}", listed(.0))]
pub struct Invalid(pub Vec<FieldIssue>);

impl From<Invalid> for ApiError {
    fn from(invalid: Invalid) -> Self {
        ApiError::invalid_all(invalid.0)
    }
}

fn listed(issues: &[FieldIssue]) -> String {
    issues.iter().map(|i| format!("`{}` {}", i.field, i.issue)).collect::<Vec<_>>().join("; ")
}

#[derive(Default)]
pub struct Issues(Vec<FieldIssue>);

impl Issues {
    /// `owner`, `admin`, `member` or any custom role: 1 to 64 characters
    /// without control characters.
    pub fn role(&mut self, field: &str, role: &str) {
        self.text(field, role, 64);
    }

    pub fn add(&mut self, field: &str, issue: impl Into<String>) {
        self.0.push(FieldIssue { field: field.to_string(), issue: issue.into() });
    }

    /// A required text of 1..=max characters without control characters.
    pub fn text(&mut self, field: &str, value: &str, max: usize) -> String {
        if let Some(issue) = text_issue(value, max) {
            self.add(field, issue);
        }
        value.to_string()
    }

    pub fn finish(self) -> Result<(), Invalid> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(Invalid(self.0))
        }
    }
}

fn text_issue(value: &str, max: usize) -> Option<String> {
    if value.trim().is_empty() {
        Some("must not be empty".to_string())
    } else if value.chars().count() > max {
        Some(format!("must be at most {max} characters"))
    } else if value.chars().any(char::is_control) {
        Some("must not contain control characters".to_string())
    } else {
        None
    }
}

/// A scope name: `^[a-z][a-z0-9_:.-]{0,63}$`.
pub fn is_scope(value: &str) -> bool {
    let mut chars = value.chars();
    value.len() <= 64
        && chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_:.-".contains(c))
}
