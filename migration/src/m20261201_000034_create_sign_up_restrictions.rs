use sea_orm_migration::prelude::*;

/// Sign-up restrictions in each region: the email domains an application
/// allows or blocks for new end users (one row per application, none
/// until it sets them).
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(SignUpRestrictions::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(SignUpRestrictions::ApplicationId).uuid().not_null().primary_key())
                    .col(ColumnDef::new(SignUpRestrictions::AllowedEmailDomains).json().not_null())
                    .col(ColumnDef::new(SignUpRestrictions::BlockedEmailDomains).json().not_null())
                    .col(ColumnDef::new(SignUpRestrictions::UpdatedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(SignUpRestrictions::Table).to_owned()).await
    }
}

#[derive(DeriveIden)]
enum SignUpRestrictions {
    Table,
    ApplicationId,
    AllowedEmailDomains,
    BlockedEmailDomains,
    UpdatedAt,
}
