//! Misuse that must not compile, with the message that names the fix.

#[test]
fn misuse_fails_to_compile_with_a_helpful_message() {
    let t = trybuild::TestCases::new();
    t.compile_fail("ui/*.rs");
}
