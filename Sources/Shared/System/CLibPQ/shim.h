#ifndef HERALD_CLIBPQ_SHIM_H
#define HERALD_CLIBPQ_SHIM_H
#include <libpq-fe.h>

/// The error-field codes are character-literal macros, which Swift does not import.
static inline char *herald_pq_sqlstate(const PGresult *result) {
    return PQresultErrorField(result, PG_DIAG_SQLSTATE);
}

static inline char *herald_pq_primary_message(const PGresult *result) {
    return PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY);
}

/// The severity of an error or notice, never translated (`WARNING`, `NOTICE`, …).
static inline char *herald_pq_severity(const PGresult *result) {
    return PQresultErrorField(result, PG_DIAG_SEVERITY_NONLOCALIZED);
}
#endif
