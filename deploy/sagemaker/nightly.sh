#!/usr/bin/env bash
# One nightly run of the batch inference job on SageMaker Batch Transform. Run from the
# repository root (with the project installed: pip install '.[sagemaker]') on a machine whose
# AWS identity has terraform's job_data and sagemaker_runner policies, with the values of
# `terraform -chdir=terraform output job_env` and `... output sagemaker_env` exported:
#   INPUT_URI=... OUTPUT_PREFIX=... WEIGHTS_URI=... SAGEMAKER_ROLE_ARN=... \
#     SAGEMAKER_STAGING_URI=... AWS_REGION=... deploy/sagemaker/nightly.sh
# Nightly from cron (its clock in UTC): 0 2 * * * cd /path/to/repo && ... deploy/sagemaker/nightly.sh
set -euo pipefail

: "${INPUT_URI:?set INPUT_URI (terraform output job_env)}"
: "${OUTPUT_PREFIX:?set OUTPUT_PREFIX (terraform output job_env)}"
: "${WEIGHTS_URI:?set WEIGHTS_URI (terraform output job_env)}"
: "${SAGEMAKER_ROLE_ARN:?set SAGEMAKER_ROLE_ARN (terraform output sagemaker_env)}"
: "${SAGEMAKER_STAGING_URI:?set SAGEMAKER_STAGING_URI (terraform output sagemaker_env)}"
: "${AWS_REGION:?set AWS_REGION (terraform output sagemaker_env)}"

# --staging-s3-uri: the unversioned staging bucket, where deleted shards leave no versions
# behind (the default, <output>/_staging/, is in the versioned output bucket).
# --incremental: every night updates the one table under OUTPUT_PREFIX, running only the input files
# added or changed since the last run (a second attempt keeps what the first committed).
python -m runners.sagemaker_job \
  --input "$INPUT_URI" \
  --output "$OUTPUT_PREFIX" \
  --weights "$WEIGHTS_URI" \
  --role "$SAGEMAKER_ROLE_ARN" \
  --region "$AWS_REGION" \
  --staging-s3-uri "$SAGEMAKER_STAGING_URI" \
  --instance-type ml.g5.xlarge \
  --instance-count 1 \
  --max-payload-mb 6 \
  --incremental
