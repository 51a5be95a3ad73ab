#ifndef HERALD_COPENSSL_SHIM_H
#define HERALD_COPENSSL_SHIM_H
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/sha.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <openssl/hmac.h>
#include <openssl/param_build.h>
#include <openssl/core_names.h>

/// SSL_set_tlsext_host_name, SSL_CTX_set_mode and SSL_CTX_set_min_proto_version are macros over
/// SSL_ctrl / SSL_CTX_ctrl, which Swift cannot import.
static inline long herald_ssl_set_sni(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}
static inline long herald_ssl_ctx_set_mode(SSL_CTX *context, long mode) {
    return SSL_CTX_set_mode(context, mode);
}
static inline long herald_ssl_ctx_set_min_tls12(SSL_CTX *context) {
    return SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
}

/// SSL_CTX_set_session_cache_mode is a macro over SSL_CTX_ctrl: a client that keeps its sessions
/// itself (to resume them on its next connection) and not in OpenSSL's internal cache.
static inline long herald_ssl_ctx_client_session_cache(SSL_CTX *context) {
    return SSL_CTX_set_session_cache_mode(context, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
}

/// EVP_EC_gen and EVP_RSA_gen are macros over the variadic EVP_PKEY_Q_keygen (the edge's keys).
static inline EVP_PKEY *herald_generate_p256_key(void) {
    return EVP_EC_gen("P-256");
}
static inline EVP_PKEY *herald_generate_rsa_key(unsigned int bits) {
    return EVP_RSA_gen(bits);
}
/// Adds one ASCII entry (such as CN) to a certificate name; MBSTRING_ASC is a macro expression.
static inline int herald_x509_name_add(X509_NAME *name, const char *field, const char *value) {
    return X509_NAME_add_entry_by_txt(name, field, MBSTRING_ASC, (const unsigned char *)value, -1, -1, 0);
}
/// SSL_CTX_set_options is a macro-free function in OpenSSL 3, but its flags are macros of macros.
static inline void herald_ssl_ctx_server_options(SSL_CTX *context) {
    SSL_CTX_set_options(context, SSL_OP_NO_COMPRESSION | SSL_OP_NO_SESSION_RESUMPTION_ON_RENEGOTIATION
                                 | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
}

/// EVP_PKEY_KEYPAIR and EVP_PKEY_PUBLIC_KEY are expressions over other macros: the selections of
/// EVP_PKEY_fromdata for a whole key pair and for a public key alone (Web Push keys).
static inline int herald_evp_pkey_keypair_selection(void) {
    return EVP_PKEY_KEYPAIR;
}
static inline int herald_evp_pkey_public_key_selection(void) {
    return EVP_PKEY_PUBLIC_KEY;
}
/// EVP_CTRL_GCM_GET_TAG and EVP_CTRL_GCM_SET_TAG are aliases of aliases: AES-GCM's tag out and in.
static inline int herald_gcm_get_tag(EVP_CIPHER_CTX *context, unsigned char *tag, int length) {
    return EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, length, tag);
}
static inline int herald_gcm_set_tag(EVP_CIPHER_CTX *context, unsigned char *tag, int length) {
    return EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, length, tag);
}
#endif
