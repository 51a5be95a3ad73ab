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

static inline void herald_pq_ignore_notice(void *argument, const char *message) {
    (void)argument;
    (void)message;
}

/// libpq prints the server's notices (`relation already exists, skipping`) to standard error by
/// default; Herald's logs are its own, so they are dropped.
static inline void herald_pq_silence_notices(PGconn *connection) {
    PQsetNoticeProcessor(connection, herald_pq_ignore_notice, NULL);
}
#endif
