/* hubhost plugin ABI v1: include this one header to get every kind. */
#ifndef HUBHOST_H
#define HUBHOST_H

#include "hubhost_plugin.h"
#include "hubhost_advertiser_id.h"
#include "hubhost_augmentation.h"
#include "hubhost_content_provider.h"
#include "hubhost_device_conditions.h"
#include "hubhost_download_request.h"
#include "hubhost_http.h"
#include "hubhost_location.h"
#include "hubhost_logging.h"
#include "hubhost_trigger_operator.h"

#endif /* HUBHOST_H */
