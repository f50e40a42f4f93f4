use super::*;

#[test]
fn values_resolve_through_consts_renames_and_kind_variants() {
    let mut om = Strings::default();
    om.add_const("CHARGE".into(), "billing.charge".into());
    om.add_rename("CHARGE_PERMISSION".into(), "CHARGE".into());
    let mut local = Strings::default();
    local.add_const("RUN".into(), "x.run".into());
    local.add_rename("PERM".into(), "CHARGE_PERMISSION".into());
    let c = |n: &str| StrExpr::Const(n.to_owned());
    assert_eq!(
        local.resolve(&c("RUN"), Some(&om)).as_deref(),
        Some("x.run")
    );
    assert_eq!(
        local.resolve(&c("CHARGE_PERMISSION"), Some(&om)).as_deref(),
        Some("billing.charge")
    );
    assert_eq!(
        local.resolve(&c("PERM"), Some(&om)).as_deref(),
        Some("billing.charge")
    );
    assert_eq!(local.resolve(&c("MISSING"), Some(&om)), None);
    // One name, two values: not resolved.
    om.add_const("CHARGE".into(), "billing.other".into());
    assert_eq!(local.resolve(&c("CHARGE_PERMISSION"), Some(&om)), None);

    let expr: syn::Expr = syn::parse_str("ShippingKind::NotifyShipment.as_str()").expect("expr");
    assert_eq!(
        StrExpr::of(&expr),
        StrExpr::Variant("NOTIFY_SHIPMENT".into())
    );
    let expr: syn::Expr = syn::parse_str("kind_of(\"x\")").expect("expr");
    assert_eq!(StrExpr::of(&expr), StrExpr::Unknown);
}

#[test]
fn specs_default_their_lane_only_through_the_default_tail() {
    let file = SourceFile::new(
        "om/src/a/kinds.rs",
        "pub const A_KINDS: &[WorkKindSpec] = &[\n\
         WorkKindSpec { name: \"X\", permission: \"a.x\", ..WorkKindSpec::DEFAULT },\n\
         WorkKindSpec { name: \"Y\", permission: \"a.y\", lane: \"bulk\", ..WorkKindSpec::DEFAULT },\n\
         WorkKindSpec { name: \"Z\", permission: \"a.z\", ..OTHER },\n\
         make_spec(\"W\"),\n];\n",
    );
    let facts =
        crate::check::workqueue::with_parsed(&file, |t| om_facts(&file, t, false)).expect("parses");
    let lanes: Vec<Option<StrExpr>> = facts.specs.iter().map(|s| s.lane.clone()).collect();
    assert_eq!(
        lanes,
        [
            Some(StrExpr::Lit("default".into())),
            Some(StrExpr::Lit("bulk".into())),
            None
        ]
    );
    // `make_spec("W")` is no spec literal: the slice is not fully understood.
    assert_eq!(facts.slices, [("A_KINDS".to_owned(), false)]);
}
