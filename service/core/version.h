/* core/version — the version ktuned and ktune report (GET /healthz, --version). */
#ifndef KT_CORE_VERSION_H
#define KT_CORE_VERSION_H

#define KTUNE_VERSION "0.1.0"

#endif
