"""tensorplug.vision.ops: box utilities, non-maximum suppression, RoIAlign, and model building blocks."""
from .boxes import (batched_nms, box_area, box_convert, box_iou, clip_boxes_to_image, generalized_box_iou, nms,
                    remove_small_boxes)
from .misc import Conv2dNormActivation, Conv3dNormActivation
from .roi_align import RoIAlign, roi_align

__all__ = ["nms", "batched_nms", "box_area", "box_iou", "generalized_box_iou", "box_convert", "clip_boxes_to_image",
           "remove_small_boxes", "roi_align", "RoIAlign", "Conv2dNormActivation", "Conv3dNormActivation"]
