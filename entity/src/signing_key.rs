use sea_orm::entity::prelude::*;

/// An application's Ed25519 token signing key (regional). The private half
/// is sealed with the master key. `retired_at` is set when a newer key takes
/// over; the public half stays published until tokens it signed expire.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "signing_keys")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub application_id: Uuid,
    pub public_key: Vec<u8>,
    pub private_key_sealed: Vec<u8>,
    pub created_at: DateTimeUtc,
    pub retired_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
