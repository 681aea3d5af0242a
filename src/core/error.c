#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_error[512];

const char *prox_status_string(prox_status status)
{
    switch (status) {
    case PROX_OK: return "ok";
    case PROX_ERR_INVALID: return "invalid argument";
    case PROX_ERR_DATA: return "bad data";
    case PROX_ERR_RANGE: return "out of range";
    case PROX_ERR_NO_MEMORY: return "out of memory";
    case PROX_STOPPED: return "stopped by callback";
    }
    return "unknown status";
}

const char *prox_last_error(void)
{
    return last_error;
}

prox_status prox_fail(prox_status status, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vsnprintf(last_error, sizeof last_error, format, args);
    va_end(args);
    return status;
}

prox_status prox_fail_recheck(prox_status check, const char *what)
{
    if (check != PROX_OK)
        return check;
    return prox_fail(PROX_ERR_DATA, "%s: a value read as not finite was finite when read again: "
                                    "the %s changed during the call", what, what);
}
