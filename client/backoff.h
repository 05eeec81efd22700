// Forwarding header: the client's reconnect backoff is common/backoff.h.
// Include that instead; this header remains for existing includes.
#ifndef MSGQ_CLIENT_BACKOFF_H_
#define MSGQ_CLIENT_BACKOFF_H_

#include "common/backoff.h"  // IWYU pragma: export

#endif  // MSGQ_CLIENT_BACKOFF_H_
