//! `#[ruststream::app]`.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{ItemFn, LitStr};

pub(crate) fn expand(args: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let mut runtime = String::from("tokio");
    if !args.is_empty() {
        let parser = syn::meta::parser(|meta| {
            if meta.path.is_ident("runtime") {
                let value: LitStr = meta.value()?.parse()?;
                runtime = value.value();
                Ok(())
            } else {
                Err(meta.error(
                    "unknown `app` option; the only one is `runtime = \"tokio\" | \"smol\" | \
                     \"async-std\"`",
                ))
            }
        });
        syn::parse::Parser::parse2(parser, args)?;
    }
    let adapter = match runtime.as_str() {
        "tokio" => quote!(::ruststream_tokio),
        "smol" => quote!(::ruststream_smol),
        "async-std" | "async_std" => quote!(::ruststream_async_std),
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
            #adapter::main(#name)
        }
    })
}
