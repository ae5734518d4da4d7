//! A draining node closes each connection after its current answer
//! (`Connection: close`), so a client never sends a request on a kept-alive
//! connection the node is about to drop unanswered.
use actix_web::{
    body::MessageBody,
    dev::{ServiceRequest, ServiceResponse},
    http::ConnectionType,
    middleware::Next,
    web,
};

use crate::state::AppState;

pub async fn close_while_draining(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let mut res = next.call(req).await?;
    let draining = res.request().app_data::<web::Data<AppState>>().is_some_and(|state| state.shutdown.is_draining());
    if draining {
        res.response_mut().head_mut().set_connection_type(ConnectionType::Close);
    }
    Ok(res)
}
