use sea_orm_migration::prelude::*;

/// Team invitations in each region: one row per invitation, only the
/// SHA-256 of its token kept.
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Invitations::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(Invitations::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(Invitations::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(Invitations::OrganizationId).uuid().not_null())
                    .col(ColumnDef::new(Invitations::Email).string().not_null())
                    .col(ColumnDef::new(Invitations::Name).string().null())
                    .col(ColumnDef::new(Invitations::Role).string().not_null())
                    .col(ColumnDef::new(Invitations::Status).string().not_null())
                    .col(ColumnDef::new(Invitations::TokenHash).binary().not_null().unique_key())
                    .col(ColumnDef::new(Invitations::InvitedBy).uuid().not_null())
                    .col(ColumnDef::new(Invitations::CreatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(Invitations::ExpiresAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(Invitations::DecidedAt).timestamp_with_time_zone().null())
                    .col(ColumnDef::new(Invitations::AcceptedBy).uuid().null())
                    .to_owned(),
            )
            .await?;
        // An organization's invitations (pending ones first looked up by email).
        manager
            .create_index(
                Index::create()
                    .if_not_exists()
                    .name("invitations_organization_email")
                    .table(Invitations::Table)
                    .col(Invitations::ApplicationId)
                    .col(Invitations::OrganizationId)
                    .col(Invitations::Email)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(Invitations::Table).to_owned()).await
    }
}

#[derive(DeriveIden)]
enum Invitations {
    Table,
    Id,
    ApplicationId,
    OrganizationId,
    Email,
    Name,
    Role,
    Status,
    TokenHash,
    InvitedBy,
    CreatedAt,
    ExpiresAt,
    DecidedAt,
    AcceptedBy,
}
