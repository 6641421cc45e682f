//! `#[ruststream::app]`.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{ItemFn, LitStr};

pub(crate) fn expand(args: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let mut runtime = String::from("tokio");
    let mut flags: Option<syn::Type> = None;
    if !args.is_empty() {
        let parser = syn::meta::parser(|meta| {
            if meta.path.is_ident("runtime") {
                let value: LitStr = meta.value()?.parse()?;
                runtime = value.value();
                Ok(())
            } else if meta.path.is_ident("args") {
                flags = Some(meta.value()?.parse()?);
                Ok(())
            } else {
                Err(meta.error(
                    "unknown `app` option; the options are `runtime = \"tokio\" | \"smol\" | \
                     \"async-std\"` and `args = MyArgs` (a `clap::Args` type)",
                ))
            }
        });
        syn::parse::Parser::parse2(parser, args)?;
    }
    let on_runtime = match runtime.as_str() {
        "tokio" => quote!(__main_on_tokio),
        "smol" => quote!(__main_on_smol),
        "async-std" | "async_std" => quote!(__main_on_async_std),
        other => {
            return Err(syn::Error::new(
                proc_macro2::Span::call_site(),
                format!(
                    "unknown runtime `{other}`: choose \"tokio\" (the default), \"smol\" or \
                     \"async-std\""
                ),
            ))
        }
    };
    let runner = runner_crate()?;
    let flags = flags.map(|ty| quote!(, #ty));
    let func: ItemFn = syn::parse2(item)?;
    if !func.sig.inputs.is_empty() {
        return Err(syn::Error::new_spanned(
            &func.sig.inputs,
            "the #[ruststream::app] function takes no parameters: it describes the app, and \
             configuration comes from on_startup",
        ));
    }
    let name = &func.sig.ident;
    Ok(quote! {
        #func

        fn main() -> ::std::process::ExitCode {
            #runner::#on_runtime!(#name #flags)
        }
    })
}

/// The path of the runner (package `rstream-runner`, library `ruststream_runner`) as the service
/// depends on it, or an error that names the dependency to add.
fn runner_crate() -> syn::Result<TokenStream> {
    use proc_macro_crate::{crate_name, FoundCrate};
    match crate_name(RUNNER_PACKAGE) {
        // The runner's own tests and examples link it as an external crate.
        Ok(FoundCrate::Itself) => Ok(quote!(::ruststream_runner)),
        Ok(FoundCrate::Name(name)) => {
            let name = runner_extern_name(&name);
            let ident = syn::Ident::new(name, proc_macro2::Span::call_site());
            Ok(quote!(::#ident))
        }
        Err(_) => Err(syn::Error::new(
            proc_macro2::Span::call_site(),
            "`#[ruststream::app]` writes a `main` that runs the app through `rstream-runner`, \
             which is not a dependency of this package: add `rstream-runner = \"0.1\"` to \
             `[dependencies]` in its Cargo.toml (tokio by default; for smol: `{ version = \
             \"0.1\", default-features = false, features = [\"smol\"] }`)",
        )),
    }
}

/// The runner's package name on crates.io.
const RUNNER_PACKAGE: &str = "rstream-runner";

/// [`RUNNER_PACKAGE`] as `proc_macro_crate` gives an unrenamed dependency's key.
const RUNNER_PACKAGE_AS_KEY: &str = "rstream_runner";

/// The name the service's code reaches the runner by, from the dependency's key as
/// `proc_macro_crate` gives it (`-` made `_`). A key that is the package's own name
/// (`rstream-runner = "0.1"`) links the library under its name, `ruststream_runner`; a renamed
/// dependency (`ruststream-runner = { package = "rstream-runner", .. }`, as this workspace
/// writes it) links it under the key. (A key spelled `rstream_runner` with `package =` would be
/// taken for the first; cargo cannot tell the two apart either from the key alone.)
fn runner_extern_name(key: &str) -> &str {
    if key == RUNNER_PACKAGE_AS_KEY {
        "ruststream_runner"
    } else {
        key
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;

    #[test]
    fn without_the_runner_as_a_dependency_the_error_names_it() {
        // This crate's own manifest has no `rstream-runner`, as a service that forgot it.
        let error = super::expand(
            quote!(),
            quote!(
                fn app() {}
            ),
        )
        .expect_err("the runner is missing")
        .to_string();
        assert!(
            error.contains("add `rstream-runner = \"0.1\"` to `[dependencies]`"),
            "{error}"
        );
    }

    #[test]
    fn the_runner_is_reached_by_its_library_name_or_the_key_it_is_renamed_to() {
        assert_eq!(
            super::RUNNER_PACKAGE.replace('-', "_"),
            super::RUNNER_PACKAGE_AS_KEY
        );
        // `rstream-runner = "0.1"`: the library's own name.
        assert_eq!(
            super::runner_extern_name("rstream_runner"),
            "ruststream_runner"
        );
        // `ruststream-runner = { package = "rstream-runner", .. }` (this workspace), or any
        // other rename: the key.
        assert_eq!(
            super::runner_extern_name("ruststream_runner"),
            "ruststream_runner"
        );
        assert_eq!(super::runner_extern_name("runner"), "runner");
    }

    #[test]
    fn an_unknown_runtime_is_refused_with_the_choices() {
        let error = super::expand(
            quote!(runtime = "glommio"),
            quote!(
                fn app() {}
            ),
        )
        .expect_err("unknown runtime")
        .to_string();
        assert!(error.contains("unknown runtime `glommio`"), "{error}");
        assert!(error.contains("\"smol\""), "{error}");
    }
}
