use sea_orm_migration::prelude::*;

use crate::m20261123_000005_create_end_users::index;

/// Governance in each region: separation-of-duties policies, access reviews
/// and their items (one per membership at the snapshot).
#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(SodPolicies::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(SodPolicies::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(SodPolicies::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(SodPolicies::Name).string().not_null())
                    .col(ColumnDef::new(SodPolicies::RoleA).string().not_null())
                    .col(ColumnDef::new(SodPolicies::RoleB).string().not_null())
                    .col(ColumnDef::new(SodPolicies::Enforced).boolean().not_null())
                    .col(ColumnDef::new(SodPolicies::CreatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(SodPolicies::UpdatedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        index(manager, "sod_policies_application_id", SodPolicies::Table, [SodPolicies::ApplicationId]).await?;
        // The holders of a role (a policy's violations): `WHERE application_id = ? AND role = ?`.
        index(
            manager,
            "memberships_application_id_role",
            Memberships::Table,
            [Memberships::ApplicationId, Memberships::Role, Memberships::UserId],
        )
        .await?;
        manager
            .create_table(
                Table::create()
                    .table(AccessReviews::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(AccessReviews::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(AccessReviews::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(AccessReviews::Name).string().not_null())
                    .col(ColumnDef::new(AccessReviews::OrganizationId).uuid().null())
                    .col(ColumnDef::new(AccessReviews::Status).string().not_null())
                    .col(ColumnDef::new(AccessReviews::ItemCount).big_integer().not_null())
                    .col(ColumnDef::new(AccessReviews::CreatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(AccessReviews::ClosedAt).timestamp_with_time_zone().null())
                    .to_owned(),
            )
            .await?;
        index(
            manager,
            "access_reviews_application_id",
            AccessReviews::Table,
            [AccessReviews::ApplicationId, AccessReviews::CreatedAt],
        )
        .await?;
        manager
            .create_table(
                Table::create()
                    .table(AccessReviewItems::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(AccessReviewItems::Id).uuid().not_null().primary_key())
                    .col(ColumnDef::new(AccessReviewItems::ApplicationId).uuid().not_null())
                    .col(ColumnDef::new(AccessReviewItems::ReviewId).uuid().not_null())
                    .col(ColumnDef::new(AccessReviewItems::UserId).uuid().not_null())
                    .col(ColumnDef::new(AccessReviewItems::OrganizationId).uuid().not_null())
                    .col(ColumnDef::new(AccessReviewItems::Role).string().not_null())
                    .col(ColumnDef::new(AccessReviewItems::Decision).string().null())
                    .col(ColumnDef::new(AccessReviewItems::DecidedAt).timestamp_with_time_zone().null())
                    .col(ColumnDef::new(AccessReviewItems::DecidedBy).string().null())
                    .to_owned(),
            )
            .await?;
        index(
            manager,
            "access_review_items_review",
            AccessReviewItems::Table,
            [AccessReviewItems::ApplicationId, AccessReviewItems::ReviewId, AccessReviewItems::Id],
        )
        .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(AccessReviewItems::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(AccessReviews::Table).to_owned()).await?;
        manager
            .drop_index(Index::drop().name("memberships_application_id_role").table(Memberships::Table).to_owned())
            .await?;
        manager.drop_table(Table::drop().table(SodPolicies::Table).to_owned()).await
    }
}

#[derive(DeriveIden, Clone, Copy)]
enum SodPolicies {
    Table,
    Id,
    ApplicationId,
    Name,
    RoleA,
    RoleB,
    Enforced,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden, Clone, Copy)]
enum Memberships {
    Table,
    ApplicationId,
    Role,
    UserId,
}

#[derive(DeriveIden, Clone, Copy)]
enum AccessReviews {
    Table,
    Id,
    ApplicationId,
    Name,
    OrganizationId,
    Status,
    ItemCount,
    CreatedAt,
    ClosedAt,
}

#[derive(DeriveIden, Clone, Copy)]
enum AccessReviewItems {
    Table,
    Id,
    ApplicationId,
    ReviewId,
    UserId,
    OrganizationId,
    Role,
    Decision,
    DecidedAt,
    DecidedBy,
}
