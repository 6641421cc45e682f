//! The role a service acts as, where it can tell: what an authorization error names.

/// The role in `token`, a JWT: its `sub` claim (the claim the broker takes the role from by
/// default, `tokenAuthClaim`), read without checking the signature, which is the broker's
/// job. `None` for anything else.
pub(crate) fn role_of(token: &str) -> Option<String> {
    use base64::Engine as _;
    let claims = token.split('.').nth(1)?;
    let claims = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(claims.trim_end_matches('='))
        .ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&claims).ok()?;
    claims.get("sub")?.as_str().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sub_claim_of_a_jwt_is_the_role() {
        // {"alg":"none"} . {"sub":"orders-service","exp":1} . (no signature)
        let token = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJvcmRlcnMtc2VydmljZSIsImV4cCI6MX0.";
        assert_eq!(role_of(token).as_deref(), Some("orders-service"));
        assert_eq!(role_of("not-a-jwt"), None);
    }
}
