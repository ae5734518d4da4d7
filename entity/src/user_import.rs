use sea_orm::entity::prelude::*;

/// A bulk import of users (regional): its lines wait sealed under the
/// master key (they hold password hashes) until a worker has taken them
/// all, `lines_done` at a time, and are then emptied.
#[derive(Clone, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "user_imports")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    /// `pending` until every line is taken, then `completed`.
    pub status: String,
    pub lines_total: i64,
    pub lines_done: i64,
    /// Lines that made a user.
    pub created: i64,
    /// Lines whose `external_id` was imported before.
    pub skipped: i64,
    pub failed: i64,
    /// The first errors: `[{"line", "external_id", "code", "message"}]`.
    pub errors: Json,
    pub lines_sealed: Vec<u8>,
    /// When a worker takes it (again).
    pub next_attempt_at: Option<DateTimeUtc>,
    /// While set and in the future, a worker owns the import.
    pub lease_until: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
    pub finished_at: Option<DateTimeUtc>,
}

/// Written by hand so that `{:?}` never shows the lines; the pattern names
/// every field, so a new column does not compile until it is listed.
impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Self {
            id,
            application_id,
            status,
            lines_total,
            lines_done,
            created,
            skipped,
            failed,
            errors,
            lines_sealed: _,
            next_attempt_at,
            lease_until,
            created_at,
            updated_at,
            finished_at,
        } = self;
        f.debug_struct("Model")
            .field("id", id)
            .field("application_id", application_id)
            .field("status", status)
            .field("lines_total", lines_total)
            .field("lines_done", lines_done)
            .field("created", created)
            .field("skipped", skipped)
            .field("failed", failed)
            .field("errors", errors)
            .field("lines_sealed", &crate::REDACTED)
            .field("next_attempt_at", next_attempt_at)
            .field("lease_until", lease_until)
            .field("created_at", created_at)
            .field("updated_at", updated_at)
            .field("finished_at", finished_at)
            .finish()
    }
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
