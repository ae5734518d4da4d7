use sea_orm::entity::prelude::*;

/// An application's payment method (regional): brand and last four digits
/// to show, the processor's token sealed with the master key (bound to the
/// application), and the billing email. One row per application.
#[derive(Clone, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "billing_profiles")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub application_id: Uuid,
    pub payment_brand: String,
    pub payment_last4: String,
    pub payment_token_sealed: Vec<u8>,
    pub billing_email: Option<String>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

/// Written by hand so that `{:?}` never shows the sealed token.
impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Self {
            application_id,
            payment_brand,
            payment_last4,
            payment_token_sealed: _,
            billing_email,
            created_at,
            updated_at,
        } = self;
        f.debug_struct("Model")
            .field("application_id", application_id)
            .field("payment_brand", payment_brand)
            .field("payment_last4", payment_last4)
            .field("payment_token_sealed", &crate::REDACTED)
            .field("billing_email", billing_email)
            .field("created_at", created_at)
            .field("updated_at", updated_at)
            .finish()
    }
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
