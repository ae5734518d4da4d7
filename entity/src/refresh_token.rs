use sea_orm::entity::prelude::*;

/// A refresh token a session was given, by SHA-256 (regional). The current
/// token has no `rotated_at`; presenting a rotated one is reuse.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "refresh_tokens")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub token_hash: Vec<u8>,
    pub application_id: Uuid,
    pub session_id: Uuid,
    pub created_at: DateTimeUtc,
    pub rotated_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
